/* driver_symbols.h: the driver entry points the runtime resolves, as
 * X(plain name, symbol): the symbol is the versioned name that CUDA 13's
 * cuda.h maps the plain name to (test_driver checks that against cuda.h
 * where one is installed). Kept free of other includes so that a file that
 * includes the real cuda.h can include it too. */
#ifndef FHJIT_DRIVER_SYMBOLS_H
#define FHJIT_DRIVER_SYMBOLS_H

#define RT_DRIVER_SYMBOLS(X)                                 \
  X(cuInit, cuInit)                                          \
  X(cuDriverGetVersion, cuDriverGetVersion)                  \
  X(cuGetErrorString, cuGetErrorString)                      \
  X(cuGetErrorName, cuGetErrorName)                          \
  X(cuDeviceGet, cuDeviceGet)                                \
  X(cuDeviceGetCount, cuDeviceGetCount)                      \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute)              \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)      \
  X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2) \
  X(cuCtxGetCurrent, cuCtxGetCurrent)                        \
  X(cuCtxSetCurrent, cuCtxSetCurrent)                        \
  X(cuCtxPushCurrent, cuCtxPushCurrent_v2)                   \
  X(cuCtxPopCurrent, cuCtxPopCurrent_v2)                     \
  X(cuCtxGetDevice, cuCtxGetDevice)                          \
  X(cuCtxGetId, cuCtxGetId)                                  \
  X(cuStreamGetCtx, cuStreamGetCtx)                          \
  X(cuStreamIsCapturing, cuStreamIsCapturing)                \
  X(cuMemAlloc, cuMemAlloc_v2)                               \
  X(cuMemFree, cuMemFree_v2)                                 \
  X(cuMemcpyHtoD, cuMemcpyHtoD_v2)                           \
  X(cuMemcpyDtoH, cuMemcpyDtoH_v2)                           \
  X(cuPointerGetAttributes, cuPointerGetAttributes)          \
  X(cuLinkCreate, cuLinkCreate_v2)                           \
  X(cuLinkAddData, cuLinkAddData_v2)                         \
  X(cuLinkComplete, cuLinkComplete)                          \
  X(cuLinkDestroy, cuLinkDestroy)                            \
  X(cuModuleLoadData, cuModuleLoadData)                      \
  X(cuModuleUnload, cuModuleUnload)                          \
  X(cuModuleGetFunction, cuModuleGetFunction)                \
  X(cuFuncSetAttribute, cuFuncSetAttribute)                  \
  X(cuFuncGetAttribute, cuFuncGetAttribute)                  \
  X(cuLaunchKernel, cuLaunchKernel)                          \
  X(cuLaunchKernelEx, cuLaunchKernelEx)

#endif
