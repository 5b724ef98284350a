/* libstdc++ of Debian's msvcrt MinGW declares basic_streambuf<char>::seekpos
   with std::fpos<int>; DuckDB's UCRT build expects std::fpos<_Mbstatet>.
   The base-class default returns pos_type(off_type(-1)). GCC's x64 mingw
   convention: hidden return pointer first, then this, then the arguments. */
struct mbstate { unsigned long wchar; unsigned short byte, state; };
struct fpos_mb { long long off; struct mbstate st; };
struct fpos_mb shim_seekpos(void *self, struct fpos_mb pos, int mode)
    __asm__("_ZNSt15basic_streambufIcSt11char_traitsIcEE7seekposESt4fposI9_MbstatetESt13_Ios_Openmode");
struct fpos_mb shim_seekpos(void *self, struct fpos_mb pos, int mode) {
    (void)self; (void)pos; (void)mode;
    struct fpos_mb r = { -1, { 0, 0, 0 } };
    return r;
}
