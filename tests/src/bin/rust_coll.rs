//! Teams and collectives through the safe Rust API.

use ishmem::{Ishmem, ReduceOp};
use ishmem_tests::check;

fn main() {
    let shmem = Ishmem::init().expect("init");
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let world = shmem.team_world();
    check!(me, world.my_pe() == me && world.n_pes() == n, "world");

    let src = shmem.alloc::<f64>(4096).expect("alloc");
    let dst = shmem.alloc::<f64>(4096 * n).expect("alloc");
    // reductions, every op on i64 and the arithmetic ones on f64
    let isrc = shmem.alloc::<i64>(1000).expect("alloc");
    let idst = shmem.alloc::<i64>(1000).expect("alloc");
    for op in [ReduceOp::And, ReduceOp::Or, ReduceOp::Xor, ReduceOp::Max, ReduceOp::Min, ReduceOp::Sum, ReduceOp::Prod]
    {
        let mut s = isrc.read_local();
        for (k, x) in s.iter_mut().enumerate() {
            *x = ((me + 1) * (k % 5 + 1)) as i64;
        }
        // Write our own copy with a put to self (the vector is shared).
        isrc.put(0, &s, me);
        world.reduce(op, &idst, &isrc, 1000);
        for k in 0..1000 {
            let vals: Vec<i64> = (0..n).map(|r| ((r + 1) * (k % 5 + 1)) as i64).collect();
            let want = vals
                .iter()
                .copied()
                .reduce(|a, b| match op {
                    ReduceOp::And => a & b,
                    ReduceOp::Or => a | b,
                    ReduceOp::Xor => a ^ b,
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                    ReduceOp::Sum => a + b,
                    ReduceOp::Prod => a * b,
                })
                .unwrap();
            check!(me, idst.read_local_at(k) == want, "{op:?} element {k}: {} vs {want}", idst.read_local_at(k));
        }
    }
    let v: Vec<f64> = (0..4096).map(|k| (me * 4096 + k) as f64).collect();
    src.put(0, &v, me);
    world.reduce_in_place(ReduceOp::Sum, &src, 4096);
    for k in 0..4096 {
        let want: f64 = (0..n).map(|r| (r * 4096 + k) as f64).sum();
        check!(me, src.read_local_at(k) == want, "in-place f64 sum {k}");
    }
    // broadcast, fcollect
    src.put(0, &v, me);
    world.broadcast(&dst, &src, 4096, n - 1);
    check!(
        me,
        dst.read_local()[..4096].iter().enumerate().all(|(k, &x)| x == ((n - 1) * 4096 + k) as f64),
        "broadcast"
    );
    world.fcollect(&dst, &src, 4096);
    check!(me, dst.read_local().iter().enumerate().all(|(k, &x)| x == k as f64), "fcollect");

    // split: even PEs; 2-D; teams dropped destroy themselves
    for _ in 0..100 {
        let even = world.split_strided(0, 2, n.div_ceil(2)).expect("split");
        check!(me, even.is_some() == (me % 2 == 0), "membership");
        if let Some(t) = &even {
            check!(me, t.my_pe() == me / 2 && t.translate_pe(t.my_pe(), &world) == Some(me), "even ranks");
            let one = shmem_one(&shmem);
            t.reduce_in_place(ReduceOp::Sum, &one, 1);
            check!(me, one.read_local_at(0) == n.div_ceil(2) as u32, "sum over evens");
            drop(one);
        } else {
            // keep allocations collective over the world
            drop(shmem_one(&shmem));
        }
    }
    let (row, col) = world.split_2d(2).expect("split_2d");
    check!(me, row.my_pe() == me % 2 && col.my_pe() == me / 2, "2-D ranks");
    let s = shmem.alloc::<u64>(1).expect("alloc");
    let d = shmem.alloc::<u64>(1).expect("alloc");
    s.put(0, &[me as u64], me);
    col.sum_scan(&d, &s, 1, false);
    let want: u64 = (0..=me / 2).map(|r| (r * 2 + me % 2) as u64).sum();
    check!(me, d.read_local_at(0) == want, "scan on a column: {} vs {want}", d.read_local_at(0));
    drop((row, col));
    if me == 0 {
        println!("rust_coll ok on {n} PEs");
    }
}

fn shmem_one(shmem: &Ishmem) -> ishmem::SymmVec<'_, u32> {
    let v = shmem.alloc::<u32>(1).expect("alloc");
    v.put(0, &[1], shmem.my_pe());
    v
}
