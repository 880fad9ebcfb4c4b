//! The safe Rust API on several PEs: symmetric vectors, put/get on slices,
//! p/g, strided forms, peer views, RAII free with reuse, Result errors.

use ishmem::{Error, Ishmem};
use ishmem_tests::check;

fn main() {
    let shmem = Ishmem::init().expect("init");
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    check!(me, matches!(Ishmem::init(), Err(Error::AlreadyInitialized)), "second handle refused");

    let mut len = 1;
    while len <= 65536 {
        let v = shmem.alloc::<u64>(len + 2).expect("alloc");
        check!(me, v.read_local().iter().all(|&x| x == 0), "alloc zeroes");
        shmem.barrier_all(); // peers may put as soon as their alloc returns
        let src: Vec<u64> = (0..len as u64).map(|i| (me as u64) << 32 | i).collect();
        v.put(1, &src, right);
        shmem.barrier_all();
        // SAFETY: between the barrier above and the next put no PE writes
        // v (the get below reads another PE's copy): a zero-copy borrow.
        let got = unsafe { v.local() };
        for i in 0..len {
            check!(me, got[1 + i] == (left as u64) << 32 | i as u64, "put len {len} element {i}: {:#x}", got[1 + i]);
        }
        check!(me, got[0] == 0 && got[len + 1] == 0, "put len {len} overran");
        let mut back = vec![0u64; len];
        v.get(1, &mut back, left);
        // left's copy holds what left-of-left sent.
        let ll = (left + n - 1) % n;
        check!(me, back.iter().enumerate().all(|(i, &x)| x == (ll as u64) << 32 | i as u64), "get len {len}");
        shmem.barrier_all();
        len *= 4;
    }

    // p/g and a peer view
    let w = shmem.alloc::<f64>(n).expect("alloc");
    for pe in 0..n {
        w.p(me, me as f64 + 0.25, pe);
    }
    shmem.barrier_all();
    for pe in 0..n {
        check!(me, w.read_local_at(pe) == pe as f64 + 0.25, "p from PE {pe}");
        check!(me, w.g(pe, right) == pe as f64 + 0.25, "g element {pe}");
    }
    // A view exists exactly for PEs sharing memory with this one.
    let shares = shmem.team_world().translate_pe(right, &shmem.team_shared()).is_some();
    // SAFETY: no PE writes w until the barrier below.
    match unsafe { w.peer_slice(right) } {
        Some(view) => check!(me, shares && view[left] == left as f64 + 0.25, "peer view"),
        None => check!(me, !shares, "PEs sharing memory have a view"),
    }
    shmem.barrier_all();
    w.write_local(0, &[-1.0]);
    shmem.barrier_all();
    check!(me, w.g(0, right) == -1.0, "write_local seen by peers");

    // strided
    let s = shmem.alloc::<i32>(64).expect("alloc");
    let src: Vec<i32> = (0..32).map(|i| i * 10 + me as i32).collect();
    s.iput(0, 3, &src, 2, 16, right);
    shmem.barrier_all();
    for i in 0..16 {
        check!(me, s.read_local_at(3 * i) == (2 * i as i32) * 10 + left as i32, "iput element {i}");
    }
    let mut dst = vec![0i32; 32];
    s.iget(0, 3, &mut dst, 2, 16, right);
    for i in 0..16 {
        check!(me, dst[2 * i] == (2 * i as i32) * 10 + me as i32, "iget element {i}");
    }
    shmem.barrier_all();

    // RAII free: the space is reused; exhaustion is an Err
    let addr = {
        let a = shmem.alloc::<u8>(1 << 20).expect("alloc");
        a.as_ptr() as usize
    };
    let b = shmem.alloc::<u8>(1 << 20).expect("alloc");
    check!(me, b.as_ptr() as usize == addr, "dropped vector's space reused");
    check!(me, matches!(shmem.alloc::<u8>(1 << 40), Err(Error::OutOfMemory { .. })), "exhaustion is an error");
    let al = shmem.alloc_aligned::<u8>(100, 1 << 16).expect("aligned");
    check!(
        me,
        (al.as_ptr() as usize).is_multiple_of(1 << 16) && al.read_local().iter().all(|&x| x == 0),
        "aligned alloc"
    );
    drop((b, al, s, w));
    if me == 0 {
        println!("rust_rma ok on {n} PEs");
    }
    shmem.finalize();
}
