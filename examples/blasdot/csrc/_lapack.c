/* LAPACK's dgebal reached through a function that only forwards its arguments, as scipy's
   wrappers of LAPACK's names reach it. dgebal has eight arguments, and gfortran adds a
   hidden length for its CHARACTER one: compiled by gfortran, it may store into the
   parameter save area that ppc64le's ABI has a caller of nine arguments allocate, and
   which a C caller of eight does not (GCC PR100799). This function's frame is where such
   stores land: a compiler must lay it out as GCC does for the call to come back. It lives
   in a file of its own so that no compiler inlines it into its caller. */

void scipy_dgebal_(const char *job, const int *n, double *a, const int *lda, int *ilo,
                   int *ihi, double *scale, int *info);

void blasdot_dgebal(const char *job, const int *n, double *a, const int *lda, int *ilo,
                    int *ihi, double *scale, int *info) {
    scipy_dgebal_(job, n, a, lda, ilo, ihi, scale, info);
}
