! A classic (OpenSHMEM 1.3 and earlier, SGI/Cray style) SHMEM Fortran
! program: fixed form, INCLUDE 'shmem.fh', implicit interfaces, symmetric
! data in COMMON blocks and a SHPALLOC'd Cray pointer. With
! CLASSIC_BAD_COUNT set it passes a negative count, which must end the
! job with an error naming SHMEM_INTEGER_PUT. Build with
!   oshfort -fcray-pointer classic.f -o classic
! (or gfortran -fcray-pointer -I$ISHMEM_ROOT/include/fortran classic.f
! -lishmem) and run on any number of PEs.
      program classic
      implicit none
      include 'shmem.fh'
! The functions this program calls, declared here (the usual habit;
! INCLUDE 'shmem_decls.fh' declares them all instead).
      integer my_pe, num_pes, shmem_my_pe, shmem_n_pes
      integer*4 shmem_int4_fadd, shmem_int4_fetch
      integer*8 shmem_int8_finc, shmem_int8_fetch, shmem_int8_cswap
      logical shmem_pe_accessible, shmem_addr_accessible
      integer ia(16), ib(16), ic(64), ired(4), isrc(4), nbad
      integer psync(SHMEM_BARRIER_SYNC_SIZE)
      integer psync2(SHMEM_REDUCE_SYNC_SIZE)
      integer*4 cnt4
      integer*8 cnt8, flag8, lock, ib8(8), ic8(8)
      real*8 dmax(2), dsrc(2), dwrk(SHMEM_REDUCE_MIN_WRKDATA_SIZE)
      integer iwrk(SHMEM_REDUCE_MIN_WRKDATA_SIZE)
      real rx(8), rg(8)
      character*8 cname, cbuf
      common /symi/ ia, ib, ic, ired, isrc
      common /syms/ psync, psync2, iwrk
      common /syma/ cnt8, flag8, lock, ib8, ic8, cnt4
      common /symd/ dmax, dsrc, dwrk, rx
      common /symc/ cname, cbuf
      integer me, npes, right, left, k, ierr, old4, m, total
      integer*8 old8
      character*(SHMEM_MAX_NAME_LEN) vname
      real heap(1)
      pointer (pheap, heap)

      call start_pes(0)
      me = my_pe()
      npes = num_pes()
      if (shmem_my_pe() .ne. me) stop 'shmem_my_pe'
      if (shmem_n_pes() .ne. npes) stop 'shmem_n_pes'
      right = mod(me + 1, npes)
      left = mod(me - 1 + npes, npes)
      nbad = 0
      do k = 1, SHMEM_BARRIER_SYNC_SIZE
        psync(k) = SHMEM_SYNC_VALUE
      end do
      do k = 1, SHMEM_REDUCE_SYNC_SIZE
        psync2(k) = SHMEM_SYNC_VALUE
      end do
      call get_environment_variable('CLASSIC_BAD_COUNT', vname)
      if (vname .ne. ' ') call shmem_integer_put(ia, ib, -1, right)
      cnt4 = 0
      cnt8 = 0
      flag8 = 0
      lock = 0
      call shmem_barrier_all()

! contiguous, strided and byte-level RMA
      do k = 1, 16
        ib(k) = me * 100 + k
      end do
      call shmem_integer_put(ia, ib, 16, right)
      do k = 1, 8
        ib8(k) = me * 1000 + k
        rx(k) = real(me) + 0.25 * k
      end do
      call shmem_put8(ic8, ib8, 8, right)
      call shmem_integer_iput(ic, ib, 2, 1, 8, right)
      cbuf = 'pe-x'
      write (cbuf(4:4), '(i1)') mod(me, 10)
      call shmem_character_put(cname, cbuf, 8, right)
      call shmem_barrier_all()
      do k = 1, 16
        if (ia(k) .ne. left * 100 + k) nbad = nbad + 1
      end do
      do k = 1, 8
        if (ic8(k) .ne. left * 1000 + k) nbad = nbad + 1
        if (ic(2 * k - 1) .ne. left * 100 + k) nbad = nbad + 1
      end do
      if (cname(4:4) .ne. char(ichar('0') + mod(left, 10))) then
        nbad = nbad + 1
      end if
      if (nbad .ne. 0) stop 'put/iput'
      call shmem_real_get(rg, rx, 8, right)
      if (rg(3) .ne. real(right) + 0.75) stop 'real get'
      call shmem_getmem(ib, ia, 64, right)
      if (ib(5) .ne. me * 100 + 5) stop 'getmem'
      call shmem_barrier_all()

! AMOs, a lock, wait_until
      do k = 1, 10
        old4 = shmem_int4_fadd(cnt4, 1, 0)
      end do
      old8 = shmem_int8_finc(cnt8, 0)
      call shmem_set_lock(lock)
      old8 = shmem_int8_fetch(flag8, 0)
      call shmem_int8_set(flag8, old8 + 1, 0)
      call shmem_clear_lock(lock)
      call shmem_barrier_all()
      if (shmem_int4_fetch(cnt4, 0) .ne. 10 * npes) stop 'fadd'
      if (shmem_int8_fetch(cnt8, 0) .ne. npes) stop 'finc'
      if (shmem_int8_fetch(flag8, 0) .ne. npes) stop 'lock'
      call shmem_barrier_all()
      if (me .eq. 0) then
        old8 = shmem_int8_cswap(cnt8, int(npes, 8), -1_8, 0)
        if (old8 .ne. npes) stop 'cswap'
      end if
      call shmem_barrier(0, 0, npes, psync)
      if (shmem_int8_fetch(cnt8, 0) .ne. -1) stop 'cswap value'
      flag8 = 0
      call shmem_barrier_all()
      call shmem_int8_inc(flag8, right)
      call shmem_int8_wait_until(flag8, SHMEM_CMP_GT, 0_8)
      call shmem_barrier_all()

! active-set collectives and reductions
      do k = 1, 4
        isrc(k) = me + k
      end do
      call shmem_int4_sum_to_all(ired, isrc, 4, 0, 0, npes, iwrk,
     &                           psync2)
      total = npes * (npes - 1) / 2
      do k = 1, 4
        if (ired(k) .ne. total + npes * k) stop 'int4 sum_to_all'
      end do
      dsrc(1) = dble(me)
      dsrc(2) = -dble(me)
      call shmem_real8_max_to_all(dmax, dsrc, 2, 0, 0, npes, dwrk,
     &                            psync2)
      if (dmax(1) .ne. dble(npes - 1) .or. dmax(2) .ne. 0d0) then
        stop 'real8 max_to_all'
      end if
      call shmem_fcollect4(ic, isrc, 4, 0, 0, npes, psync)
      do m = 0, npes - 1
        if (ic(4 * m + 2) .ne. m + 2) stop 'fcollect4'
      end do
      do k = 1, 8
        ib8(k) = 7000 + k
      end do
      call shmem_broadcast8(ic8, ib8, 8, 0, 0, 0, npes, psync)
      if (me .ne. 0 .and. ic8(8) .ne. 7008) stop 'broadcast8'
      call shmem_barrier_all()

! SHPALLOC and SHMEM_PTR
      call shpalloc(pheap, 4, ierr, 1)
      if (ierr .ne. 0) stop 'shpalloc'
      heap(1) = 0.0
      call shmem_barrier_all()
      call shmem_real_put(heap, real(me) + 0.5, 1, right)
      call shmem_barrier_all()
      if (heap(1) .ne. real(left) + 0.5) stop 'shpalloc put'
      if (.not. shmem_pe_accessible(right)) stop 'pe_accessible'
      if (.not. shmem_addr_accessible(heap, right)) stop 'addr_acc'
      call shpdeallc(pheap, ierr, 1)
      if (ierr .ne. 0) stop 'shpdeallc'

      call shmem_info_get_name(vname)
      if (vname(1:9) .ne. 'ishmem-rs') stop 'info_get_name'
      call shmem_barrier_all()
      if (me .eq. 0) print '(a)', 'fortran classic ok'
      call shmem_finalize()
      end
