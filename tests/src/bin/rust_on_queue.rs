//! Device-queue operations from the safe Rust API (the `*_on_queue`
//! family): puts and gets enqueued on this PE's device queue, ordered by
//! events, then a barrier on the queue. Needs a device runtime (run by
//! tests/device/test-device.sh, which provides the CPU OpenCL runtime).

use ishmem::Ishmem;
use ishmem_tests::check;

fn main() {
    let shmem = Ishmem::init().expect("init");
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    let inbox = shmem.alloc::<u64>(256).expect("alloc");
    let q = shmem.device_queue();
    let src: Vec<u64> = (0..256).map(|i| (me * 100_000 + i) as u64).collect();
    // SAFETY: src outlives the wait below.
    let put = unsafe { inbox.put_on_queue(0, &src, right, &q, &[]) };
    let quiet = q.quiet(&[put]);
    let barrier = q.barrier_all(&[quiet]);
    q.wait(&[barrier]);
    let want: Vec<u64> = (0..256).map(|i| (left * 100_000 + i) as u64).collect();
    check!(me, inbox.read_local() == want.as_slice(), "put_on_queue reached the right neighbour");
    let mut back = vec![0u64; 256];
    // SAFETY: back outlives the wait below and is not read before it.
    let get = unsafe { inbox.get_on_queue(0, &mut back, right, &q, &[]) };
    q.wait(&[get]);
    check!(me, back == src, "get_on_queue read what this PE put");
    shmem.barrier_all();
    if me == 0 {
        println!("rust on_queue ok on {n} PEs");
    }
}
