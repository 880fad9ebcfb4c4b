! The rest of the Fortran module on several PEs: typed RMA (integer(4/8),
! real(4/8), complex), p/g, strided, AMOs, signals, wait_until, teams and
! collectives, with the ishmem (Intel SHMEM) names for a few.
program coverage
  use shmem
  use, intrinsic :: iso_c_binding
  implicit none
  integer(4), pointer :: i4(:), cnt(:), bsrc(:)
  integer(8), pointer :: i8(:), red(:), flag(:)
  real(4), pointer :: r4(:)
  real(4) :: rl(16)
  complex(8), pointer :: z(:)
  integer(8), pointer :: sig(:)
  integer :: me, npes, right, left, k, team, xt, yt, rc
  integer(8) :: old, got8

  call shmem_init()
  me = shmem_my_pe()
  npes = shmem_n_pes()
  right = modulo(me + 1, npes)
  left = modulo(me - 1, npes)
  call shmem_alloc(i4, 16)
  call shmem_alloc(cnt, 1)
  call shmem_alloc(i8, 16)
  call shmem_alloc(red, 8)
  call shmem_alloc(flag, 1)
  call shmem_alloc(r4, 16)
  call shmem_alloc(z, 4)
  call shmem_alloc(sig, 1)
  cnt = 0
  flag = 0
  sig = 0
  call shmem_barrier_all()

  call shmem_put(i4, [(me * 100 + k, k = 1, 16)], 16, right)
  call shmem_put(r4, [(real(me) + k * 0.5, k = 1, 16)], 16, right)
  call shmem_put(z, [(cmplx(me, k, kind=8), k = 1, 4)], 4, right)
  call shmem_iput(i8, [(int(me * 10 + k, 8), k = 1, 8)], 2, 1, 8, right)
  call shmem_barrier_all()
  if (any(i4 /= [(left * 100 + k, k = 1, 16)])) error stop "put int4"
  if (r4(3) /= real(left) + 1.5) error stop "put real4"
  if (z(2) /= cmplx(left, 2, kind=8)) error stop "put complex8"
  if (i8(3) /= left * 10 + 2) error stop "iput int8"
  if (shmem_g(i4(5), right) /= me * 100 + 5) error stop "g int4"
  call shmem_p(i8(16), 77_8, right)
  call shmem_barrier_all()
  if (i8(16) /= 77) error stop "p int8"

  ! AMOs on integer(4) and integer(8)
  do k = 1, 50
    rc = shmem_atomic_fetch_add(cnt(1), 1, 0)
  end do
  call shmem_atomic_inc(cnt(1), 0)
  old = shmem_atomic_fetch_or(flag(1), ishft(1_8, me), 0)
  call shmem_barrier_all()
  if (shmem_atomic_fetch(cnt(1), 0) /= 51 * npes) error stop "fetch_add total"
  if (shmem_atomic_fetch(flag(1), 0) /= 2_8**npes - 1) error stop "fetch_or mask"
  call shmem_barrier_all()

  ! signals and waits
  call shmem_put_signal(i8, [(int(k, 8), k = 1, 8)], 8, sig(1), 1_8, SHMEM_SIGNAL_SET, right)
  got8 = shmem_signal_wait_until(sig(1), SHMEM_CMP_EQ, 1_8)
  if (i8(8) /= 8) error stop "put_signal data"
  call shmem_barrier_all()
  if (me == 0) then
    do k = 1, npes - 1
      call shmem_atomic_set(flag(1), -5_8, k)
    end do
  else
    call shmem_wait_until(flag(1), SHMEM_CMP_EQ, -5_8)
  end if
  call shmem_barrier_all()

  ! teams and collectives
  rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, team)
  if (rc /= 0) error stop "split_strided"
  if (mod(me, 2) == 0) then
    if (shmem_team_my_pe(team) /= me / 2) error stop "team rank"
    red = me
    if (shmem_max_reduce(team, red(2:2), red(1:1), 1) /= 0) error stop "team max"
    if (red(2) /= 2 * ((npes + 1) / 2 - 1)) error stop "team max value"
    call shmem_team_destroy(team)
  else
    if (team /= SHMEM_TEAM_INVALID) error stop "non-member"
  end if
  rc = shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, xt, yt)
  if (shmem_team_n_pes(xt) /= min(2, npes - 2 * (me / 2))) error stop "x team size"
  red(1) = int(me, 8)
  if (shmem_sum_reduce(yt, red(3:3), red(1:1), 1) /= 0) error stop "y sum"
  call shmem_team_destroy(xt)
  call shmem_team_destroy(yt)
  red(1:4) = int(me + 1, 8)
  if (shmem_prod_reduce(SHMEM_TEAM_WORLD, red(5:8), red(1:4), 4) /= 0) error stop "prod"
  if (red(5) /= product([(int(k, 8), k = 1, npes)])) error stop "prod value"
  call shmem_alloc(bsrc, 16)
  bsrc = [(k, k = 1, 16)]
  if (shmem_broadcast(SHMEM_TEAM_WORLD, i4, bsrc, 16, 0) /= 0) error stop "bcast"
  if (i4(16) /= 16) error stop "bcast value"
  call shmem_dealloc(bsrc)
  if (shmem_xor_reduce(SHMEM_TEAM_WORLD, red(1:1), red(1:1), 1) /= 0) error stop "xor in place"

  ! byte-level RMA on arrays of any type
  call shmem_barrier_all()
  call shmem_putmem(r4, [(real(me) * 2.0 + k, k = 1, 16)], 64, right)
  call shmem_putmem_nbi(i4, [(me + k, k = 1, 16)], 32, right)
  call shmem_quiet()
  call shmem_barrier_all()
  if (r4(16) /= real(left) * 2.0 + 16) error stop "putmem real4"
  if (i4(8) /= left + 8 .or. i4(9) /= 9) error stop "putmem_nbi int4"
  call shmem_getmem(red, i8, 64, right)
  call shmem_getmem_nbi(rl, r4, 64, right)
  call shmem_quiet()
  if (any(red(1:8) /= [(int(k, 8), k = 1, 8)])) error stop "getmem int8"
  if (rl(16) /= real(me) * 2.0 + 16) error stop "getmem_nbi real4"
  call shmem_barrier_all()
  call shmem_dealloc(sig)
  call shmem_dealloc(z)
  call shmem_dealloc(r4)
  call shmem_dealloc(flag)
  call shmem_dealloc(red)
  call shmem_dealloc(i8)
  call shmem_dealloc(cnt)
  call shmem_dealloc(i4)
  if (me == 0) print '(a,i0,a)', "fortran coverage ok on ", npes, " PEs"
  call shmem_finalize()
end program coverage
