/* layercheck.c: the program of each layer's link check (CMakeLists.txt):
 * it uses nothing itself; the layer's whole archive is linked around it
 * with only the layers it may use, so a reach upward is an undefined
 * symbol. */
int main(void) { return 0; }
