//! Example (and multi-PE test): pass a token around the ring with
//! put_signal, count laps with an atomic, and check a sum reduction.
//! Run: `ishmrun -n 4 target/debug/examples/ring`.

use ishmem::{Cmp, Ishmem, ReduceOp, SignalOp};

fn main() -> Result<(), ishmem::Error> {
    let shmem = Ishmem::init()?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let right = (me + 1) % n;
    let token = shmem.alloc::<u64>(1)?;
    let sig = shmem.alloc::<u64>(1)?;
    let laps = shmem.alloc::<u64>(1)?;
    const LAPS: u64 = 10;
    for lap in 1..=LAPS {
        if me == 0 {
            token.put_signal(0, &[lap * 1000], &sig, 0, lap, SignalOp::Set, right);
            sig.signal_wait_until(0, Cmp::Eq, lap);
            assert_eq!(token.read_local_at(0), lap * 1000 + n as u64 - 1, "token came back with every PE's increment");
            laps.atomic_fetch_add(0, 1, 0);
        } else {
            sig.signal_wait_until(0, Cmp::Eq, lap);
            let t = token.read_local_at(0) + 1;
            token.put_signal(0, &[t], &sig, 0, lap, SignalOp::Set, right);
        }
    }
    shmem.barrier_all();
    assert_eq!(laps.atomic_fetch(0, 0), LAPS);
    let v = shmem.alloc::<u64>(1)?;
    v.put(0, &[me as u64], me);
    shmem.team_world().reduce_in_place(ReduceOp::Sum, &v, 1);
    assert_eq!(v.read_local_at(0), (n * (n - 1) / 2) as u64);
    if me == 0 {
        println!("ring ok: {LAPS} laps over {n} PEs");
    }
    Ok(())
}
