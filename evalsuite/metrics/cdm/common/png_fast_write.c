#define _GNU_SOURCE
#include <dlfcn.h>
#include <png.h>
#include <stdlib.h>
/* Make every PNG libgs writes cheap to encode: zlib level from $PNGFAST_LEVEL (default 1), no row filter. */
png_structp png_create_write_struct_2(png_const_charp v, png_voidp e, png_error_ptr ef, png_error_ptr wf,
    png_voidp m, png_malloc_ptr mf, png_free_ptr ff) {
  static png_structp (*real)(png_const_charp, png_voidp, png_error_ptr, png_error_ptr, png_voidp, png_malloc_ptr, png_free_ptr);
  if (!real) real = dlsym(RTLD_NEXT, "png_create_write_struct_2");
  png_structp p = real(v, e, ef, wf, m, mf, ff);
  if (p) {
    const char *lv = getenv("PNGFAST_LEVEL");
    png_set_compression_level(p, lv ? atoi(lv) : 1);
    png_set_filter(p, 0, PNG_FILTER_NONE);
  }
  return p;
}
