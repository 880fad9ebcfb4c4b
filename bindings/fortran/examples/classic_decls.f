! A classic SHMEM Fortran program that leaves the function result types
! to the library: INCLUDE 'shmem_decls.fh' after 'shmem.fh' (the opt-in;
! a program that declares them itself, as classic.f does, must not).
!   oshfort classic_decls.f -o classic_decls
      program classic_decls
      implicit none
      include 'shmem.fh'
      include 'shmem_decls.fh'
      integer*8 cnt8, old8
      common /symc/ cnt8
      integer me, npes

      call start_pes(0)
      me = shmem_my_pe()
      npes = shmem_n_pes()
      if (me .ne. my_pe() .or. npes .ne. num_pes()) stop 'pe numbers'
      cnt8 = 0
      call shmem_barrier_all()
      old8 = shmem_int8_fadd(cnt8, int(me + 1, 8), 0)
      call shmem_barrier_all()
      if (shmem_int8_fetch(cnt8, 0) .ne. npes * (npes + 1) / 2)
     &  stop 'fadd total'
      if (.not. shmem_pe_accessible(mod(me + 1, npes))) stop 'acc'
      call shmem_barrier_all()
      if (me .eq. 0) print '(a)', 'fortran classic decls ok'
      end
