/* cuda_api.h: fhjit's own declarations of the subset of the CUDA driver API
 * that the runtime, its fake driver and the GPU tests use, so that nothing
 * needs the CUDA toolkit to build. Values and signatures are those of CUDA
 * 13's cuda.h (test_driver checks them against cuda.h where one exists).
 * Functions are reached through dlsym by their explicitly versioned names
 * (cuMemAlloc_v2, ...): cuda.h maps the plain names to versioned symbols with
 * macros, so the plain symbol can be an older ABI. */
#ifndef FHJIT_CUDA_API_H
#define FHJIT_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUlinkState_st *CUlinkState;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_STUB_LIBRARY = 34,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
  CUDA_ERROR_UNKNOWN = 999
};

/* CUdevice_attribute */
enum {
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
};

/* CUpointer_attribute */
typedef int CUpointer_attribute;
enum {
  CU_POINTER_ATTRIBUTE_CONTEXT = 1,
  CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
  CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
  CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12
};

/* CUjit_option and CUjitInputType */
typedef int CUjit_option;
typedef int CUjitInputType;
enum {
  CU_JIT_WALL_TIME = 2,
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CU_JIT_OPTIMIZATION_LEVEL = 7,
  CU_JIT_TARGET = 9,
  CU_JIT_LOG_VERBOSE = 12
};
enum { CU_JIT_INPUT_CUBIN = 0, CU_JIT_INPUT_PTX = 1 };

/* CUfunction_attribute */
enum {
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9,
  CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14
};

/* Streams, events, capture */
enum { CU_STREAM_DEFAULT = 0, CU_STREAM_NON_BLOCKING = 1 };
enum { CU_EVENT_DEFAULT = 0 };
typedef int CUstreamCaptureMode;
enum {
  CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_STREAM_CAPTURE_MODE_RELAXED = 2
};
#define FHJIT_CU_STREAM_LEGACY ((CUstream)0x1)
#define FHJIT_CU_STREAM_PER_THREAD ((CUstream)0x2)

/* The oldest driver the runtime accepts (cuDriverGetVersion encoding):
 * cuCtxGetId and cuStreamGetCtx as used here need CUDA 12.0. */
#define FHJIT_CUDA_MIN_DRIVER 12000

/* Function pointer types, named after the symbol they are loaded from. */
typedef CUresult (*PFN_cuInit)(unsigned int flags);
typedef CUresult (*PFN_cuDriverGetVersion)(int *version);
typedef CUresult (*PFN_cuGetErrorString)(CUresult error, const char **str);
typedef CUresult (*PFN_cuGetErrorName)(CUresult error, const char **str);
typedef CUresult (*PFN_cuDeviceGet)(CUdevice *device, int ordinal);
typedef CUresult (*PFN_cuDeviceGetCount)(int *count);
typedef CUresult (*PFN_cuDeviceGetAttribute)(int *value, int attrib, CUdevice dev);
typedef CUresult (*PFN_cuDevicePrimaryCtxRetain)(CUcontext *pctx, CUdevice dev);
typedef CUresult (*PFN_cuDevicePrimaryCtxRelease_v2)(CUdevice dev);
typedef CUresult (*PFN_cuCtxGetCurrent)(CUcontext *pctx);
typedef CUresult (*PFN_cuCtxSetCurrent)(CUcontext ctx);
typedef CUresult (*PFN_cuCtxPushCurrent_v2)(CUcontext ctx);
typedef CUresult (*PFN_cuCtxPopCurrent_v2)(CUcontext *pctx);
typedef CUresult (*PFN_cuCtxGetDevice)(CUdevice *device);
typedef CUresult (*PFN_cuCtxGetId)(CUcontext ctx, unsigned long long *id);
typedef CUresult (*PFN_cuCtxCreate_v2)(CUcontext *pctx, unsigned int flags, CUdevice dev);
typedef CUresult (*PFN_cuCtxDestroy_v2)(CUcontext ctx);
typedef CUresult (*PFN_cuCtxSynchronize)(void);
typedef CUresult (*PFN_cuStreamGetCtx)(CUstream stream, CUcontext *pctx);
typedef enum CUstreamCaptureStatus {
  CU_STREAM_CAPTURE_STATUS_NONE = 0,
  CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
  CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2
} CUstreamCaptureStatus;
typedef CUresult (*PFN_cuStreamIsCapturing)(CUstream stream, CUstreamCaptureStatus *status);
typedef CUresult (*PFN_cuStreamCreate)(CUstream *stream, unsigned int flags);
typedef CUresult (*PFN_cuStreamDestroy_v2)(CUstream stream);
typedef CUresult (*PFN_cuStreamSynchronize)(CUstream stream);
typedef CUresult (*PFN_cuStreamBeginCapture_v2)(CUstream stream, CUstreamCaptureMode mode);
typedef CUresult (*PFN_cuStreamEndCapture)(CUstream stream, CUgraph *graph);
typedef CUresult (*PFN_cuGraphInstantiateWithFlags)(CUgraphExec *exec, CUgraph graph,
                                                    unsigned long long flags);
typedef CUresult (*PFN_cuGraphLaunch)(CUgraphExec exec, CUstream stream);
typedef CUresult (*PFN_cuGraphExecDestroy)(CUgraphExec exec);
typedef CUresult (*PFN_cuGraphDestroy)(CUgraph graph);
typedef CUresult (*PFN_cuEventCreate)(CUevent *event, unsigned int flags);
typedef CUresult (*PFN_cuEventDestroy_v2)(CUevent event);
typedef CUresult (*PFN_cuEventRecord)(CUevent event, CUstream stream);
typedef CUresult (*PFN_cuEventSynchronize)(CUevent event);
typedef CUresult (*PFN_cuEventElapsedTime)(float *ms, CUevent start, CUevent end);
typedef CUresult (*PFN_cuMemAlloc_v2)(CUdeviceptr *dptr, size_t bytes);
typedef CUresult (*PFN_cuMemFree_v2)(CUdeviceptr dptr);
typedef CUresult (*PFN_cuMemGetInfo_v2)(size_t *free_bytes, size_t *total_bytes);
typedef CUresult (*PFN_cuMemcpyHtoD_v2)(CUdeviceptr dst, const void *src, size_t bytes);
typedef CUresult (*PFN_cuMemcpyDtoH_v2)(void *dst, CUdeviceptr src, size_t bytes);
typedef CUresult (*PFN_cuMemcpyDtoD_v2)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
typedef CUresult (*PFN_cuMemsetD8_v2)(CUdeviceptr dst, unsigned char value, size_t count);
typedef CUresult (*PFN_cuMemGetAddressRange_v2)(CUdeviceptr *base, size_t *size, CUdeviceptr ptr);
typedef CUresult (*PFN_cuPointerGetAttribute)(void *data, CUpointer_attribute attribute,
                                              CUdeviceptr ptr);
typedef CUresult (*PFN_cuPointerGetAttributes)(unsigned int count, CUpointer_attribute *attributes,
                                               void **data, CUdeviceptr ptr);
typedef CUresult (*PFN_cuLinkCreate_v2)(unsigned int nopts, CUjit_option *options, void **values,
                                        CUlinkState *state);
typedef CUresult (*PFN_cuLinkAddData_v2)(CUlinkState state, CUjitInputType type, void *data,
                                         size_t size, const char *name, unsigned int nopts,
                                         CUjit_option *options, void **values);
typedef CUresult (*PFN_cuLinkComplete)(CUlinkState state, void **cubin, size_t *size);
typedef CUresult (*PFN_cuLinkDestroy)(CUlinkState state);
typedef CUresult (*PFN_cuModuleLoadData)(CUmodule *module, const void *image);
typedef CUresult (*PFN_cuModuleUnload)(CUmodule module);
typedef CUresult (*PFN_cuModuleGetFunction)(CUfunction *func, CUmodule module, const char *name);
typedef CUresult (*PFN_cuFuncSetAttribute)(CUfunction func, int attrib, int value);
typedef CUresult (*PFN_cuFuncGetAttribute)(int *value, int attrib, CUfunction func);
/* cuLaunchKernelEx's configuration (CUDA 12.0), with only the attributes
 * fhjit sets: the cluster dimension (id 4, three unsigned ints) and
 * programmatic stream serialization (id 6, an int value). */
typedef struct CUlaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    struct {
      unsigned int x, y, z;
    } cluster_dim;
    int programmatic_stream_serialization_allowed;
  } value;
} CUlaunchAttribute;
#define CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION 4
#define CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION 6

typedef struct CUlaunchConfig {
  unsigned int grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes;
  CUstream stream;
  CUlaunchAttribute *attrs;
  unsigned int nattrs;
} CUlaunchConfig;

typedef CUresult (*PFN_cuLaunchKernelEx)(const CUlaunchConfig *config, CUfunction f,
                                         void **params, void **extra);
typedef CUresult (*PFN_cuLaunchKernel)(CUfunction f, unsigned int gx, unsigned int gy,
                                       unsigned int gz, unsigned int bx, unsigned int by,
                                       unsigned int bz, unsigned int shared_bytes,
                                       CUstream stream, void **params, void **extra);

#endif
