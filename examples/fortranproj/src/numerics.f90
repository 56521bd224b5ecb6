! Numerics that need gfortran's runtime: an ALLOCATE, libm's exp and log, and formatted
! I/O into a string (libgfortran's own code), called from C through bind(C).
module numerics
  use iso_c_binding
  implicit none
contains
  ! sum over i = 1..n of exp(i/n) + log(i), rounded to 4 decimals by a formatted
  ! WRITE and read back.
  function series(n) bind(c, name='fortranproj_series') result(total)
    integer(c_int), value :: n
    real(c_double) :: total
    real(c_double), allocatable :: terms(:)
    character(len=32) :: text
    integer :: i
    allocate(terms(n))
    do i = 1, n
      terms(i) = exp(real(i, c_double) / n) + log(real(i, c_double))
    end do
    total = sum(terms)
    deallocate(terms)
    write(text, '(F20.4)') total
    read(text, *) total
  end function

  ! The Fortran runtime's formatting of `value` with edit descriptor E12.5, into `out`
  ! (at least 13 bytes), NUL-terminated.
  subroutine format_e(value, out) bind(c, name='fortranproj_format_e')
    real(c_double), value :: value
    character(kind=c_char), intent(out) :: out(13)
    character(len=12) :: text
    integer :: i
    write(text, '(ES12.5)') value
    do i = 1, 12
      out(i) = text(i:i)
    end do
    out(13) = c_null_char
  end subroutine
end module
