! A distributed 1-D heat stencil: each PE owns a block of the rod, halo cells
! come from the neighbours by put, the total heat is a sum reduction, and
! every PE checks the gathered field against a serial computation.
program heat
  use shmem
  implicit none
  integer, parameter :: local = 200, steps = 150
  real(8), pointer :: u(:), halo(:), total(:), part(:), all(:)
  real(8) :: nxt(local), serial(0:1), ref_heat
  real(8), allocatable :: ref(:), tmp(:)
  integer :: me, npes, left, right, i, s, n, g

  call shmem_init()
  me = shmem_my_pe()
  npes = shmem_n_pes()
  n = local * npes
  left = modulo(me - 1, npes)
  right = modulo(me + 1, npes)
  call shmem_alloc(u, local)
  call shmem_alloc(halo, 2)          ! halo(1): from the left, halo(2): from the right
  call shmem_alloc(part, 1)
  call shmem_alloc(total, 1)
  call shmem_alloc(all, n)
  do i = 1, local
    g = me * local + i - 1
    u(i) = merge(500d0, sin(g * 0.02d0), g == n / 2)
  end do
  call shmem_barrier_all()
  do s = 1, steps
    call shmem_put(halo(2:2), u(1:1), 1, left)
    call shmem_put(halo(1:1), u(local:local), 1, right)
    call shmem_barrier_all()
    nxt(1) = u(1) + 0.25d0 * (halo(1) - 2 * u(1) + u(2))
    do i = 2, local - 1
      nxt(i) = u(i) + 0.25d0 * (u(i - 1) - 2 * u(i) + u(i + 1))
    end do
    nxt(local) = u(local) + 0.25d0 * (u(local - 1) - 2 * u(local) + halo(2))
    call shmem_barrier_all()
    u(:) = nxt(:)
  end do
  part(1) = sum(u)
  if (shmem_sum_reduce(SHMEM_TEAM_WORLD, total, part, 1) /= 0) error stop "sum_reduce failed"
  if (shmem_fcollect(SHMEM_TEAM_WORLD, all, u, local) /= 0) error stop "fcollect failed"

  allocate(ref(0:n + 1), tmp(n))
  do g = 0, n - 1
    ref(g + 1) = merge(500d0, sin(g * 0.02d0), g == n / 2)
  end do
  do s = 1, steps
    ref(0) = ref(n)
    ref(n + 1) = ref(1)
    do i = 1, n
      tmp(i) = ref(i) + 0.25d0 * (ref(i - 1) - 2 * ref(i) + ref(i + 1))
    end do
    ref(1:n) = tmp
  end do
  ref_heat = sum(ref(1:n))
  do i = 1, n
    if (abs(all(i) - ref(i)) > 1d-9) then
      print *, "PE", me, "cell", i, all(i), "serial", ref(i)
      error stop 1
    end if
  end do
  if (abs(total(1) - ref_heat) > 1d-6 * abs(ref_heat)) then
    print *, "PE", me, "heat", total(1), "serial", ref_heat
    error stop 1
  end if
  serial = 0
  if (me == 0) print '(a,i0,a,f12.6)', "fortran heat ok on ", npes, " PEs, total ", total(1)
  call shmem_barrier_all()
  call shmem_dealloc(all)
  call shmem_dealloc(total)
  call shmem_dealloc(part)
  call shmem_dealloc(halo)
  call shmem_dealloc(u)
  call shmem_finalize()
end program heat
