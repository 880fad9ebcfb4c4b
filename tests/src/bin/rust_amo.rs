//! AMOs, signals and waits through the safe Rust API on several PEs.

use ishmem::{Cmp, Ishmem, SignalOp};
use ishmem_tests::check;

fn main() {
    let shmem = Ishmem::init().expect("init");
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    const K: u64 = 500;

    // A shared counter on PE n-1: fetched values unique, increasing, exact.
    let counter = shmem.alloc::<u64>(2).expect("alloc");
    let fetched = shmem.alloc::<u64>(K as usize).expect("alloc");
    let mut mine = vec![0u64; K as usize];
    for (i, slot) in mine.iter_mut().enumerate() {
        *slot = counter.atomic_fetch_add(0, 1, n - 1);
        check!(me, i == 0 || *slot > 0, "fetch_add");
    }
    check!(me, mine.windows(2).all(|w| w[0] < w[1]), "values from one PE increase");
    fetched.put(0, &mine, me); // publish locally for PE 0 to gather
    shmem.barrier_all();
    if me == 0 {
        let mut all = Vec::new();
        for pe in 0..n {
            let mut v = vec![0u64; K as usize];
            fetched.get(0, &mut v, pe);
            all.extend(v);
        }
        all.sort_unstable();
        check!(me, all == (0..K * n as u64).collect::<Vec<_>>(), "every value fetched exactly once");
        check!(me, counter.atomic_fetch(0, n - 1) == K * n as u64, "total");
    }

    // compare_swap lock around a non-atomic update on PE 0
    let lock = shmem.alloc::<i32>(1).expect("alloc");
    let data = shmem.alloc::<i64>(1).expect("alloc");
    for _ in 0..200 {
        while lock.atomic_compare_swap(0, 0, me as i32 + 1, 0) != 0 {}
        let v = data.g(0, 0);
        data.p(0, v + 1, 0);
        shmem.quiet();
        lock.atomic_set(0, 0, 0);
    }
    shmem.barrier_all();
    check!(me, data.g(0, 0) == 200 * n as i64, "lock-protected count {}", data.g(0, 0));

    // bitwise
    let mask = shmem.alloc::<u32>(1).expect("alloc");
    mask.atomic_fetch_or(0, 1 << me, 0);
    shmem.barrier_all();
    check!(me, mask.atomic_fetch(0, 0) == (1u32 << n) - 1, "or mask");
    shmem.barrier_all();
    mask.atomic_fetch_xor(0, 1 << me, 0);
    shmem.barrier_all();
    check!(me, mask.atomic_fetch(0, 0) == 0, "xor mask");

    // float swap
    let f = shmem.alloc::<f64>(1).expect("alloc");
    f.atomic_set(0, me as f64 + 0.5, right);
    shmem.barrier_all();
    check!(me, f.atomic_swap(0, -1.0, me) == left as f64 + 0.5, "float swap");

    // put_signal + signal_wait_until; waits with masks
    let payload = shmem.alloc::<u32>(4096).expect("alloc");
    let sig = shmem.alloc::<u64>(2).expect("alloc");
    shmem.barrier_all();
    for round in 1..=20u64 {
        let src: Vec<u32> = (0..4096).map(|i| (round as u32) << 20 | (me as u32) << 16 | i).collect();
        payload.put_signal(0, &src, &sig, 0, round, SignalOp::Set, right);
        check!(me, sig.signal_wait_until(0, Cmp::Eq, round) == round, "signal");
        check!(
            me,
            payload
                .read_local()
                .iter()
                .enumerate()
                .all(|(i, &x)| x == (round as u32) << 20 | (left as u32) << 16 | i as u32),
            "data visible with the signal in round {round}"
        );
        sig.signal_update(1, 1, SignalOp::Add, left);
        sig.wait_until(1, Cmp::Ge, round);
    }
    let flags = shmem.alloc::<i64>(4).expect("alloc");
    shmem.barrier_all();
    flags.atomic_set(2, 7, right);
    flags.atomic_set(0, 7, right);
    check!(
        me,
        flags.wait_until_any(Some(&[true, false, false, false]), Cmp::Eq, 7) == Some(2),
        "wait_until_any with a mask"
    );
    check!(me, flags.wait_until_any(Some(&[true; 4]), Cmp::Eq, 7).is_none(), "all masked");
    let some = flags.wait_until_some(None, Cmp::Eq, 7);
    check!(me, some.contains(&2), "wait_until_some {some:?}");
    check!(me, flags.test_any(None, Cmp::Gt, 100).is_none(), "test_any none");
    shmem.barrier_all();
    check!(
        me,
        flags.test_some(None, Cmp::Eq, 7) == vec![0, 2]
            && flags.test_all(Some(&[false, true, false, true]), Cmp::Eq, 7),
        "test_some/test_all"
    );
    shmem.barrier_all();
    // SymmLock: a guarded non-atomic update
    let lock = shmem.lock().expect("lock");
    let total = shmem.alloc::<i64>(1).expect("alloc");
    for _ in 0..100 {
        let _g = lock.lock();
        let v = total.g(0, 0);
        total.p(0, v + 1, 0);
    }
    shmem.barrier_all();
    check!(me, total.g(0, 0) == 100 * n as i64, "SymmLock count");
    shmem.barrier_all();
    if me == 0 {
        let g = lock.lock();
        shmem.barrier_all();
        shmem.barrier_all();
        drop(g);
    } else {
        shmem.barrier_all();
        // Held by PE 0: try_lock fails and must leave the lock alone.
        check!(me, lock.try_lock().is_none(), "try_lock on a held lock");
        shmem.barrier_all();
    }
    shmem.barrier_all();
    if me == 0 {
        println!("rust_amo ok on {n} PEs");
    }
}
