//! Symmetric globals from Rust: puts to and AMOs on `static mut`s of other
//! PEs (the executable's data segment; Rust programs link their RELRO data
//! in a load segment of its own, which the data segment must skip).

use ishmem::Ishmem;
use ishmem_tests::check;

static mut COUNTER: u64 = 0;
static mut INBOX: [u32; 64] = [0; 64];
// Initialized data (.data, not .bss): the value must survive the move onto
// shared memory at init.
static mut SEED: [u64; 4] = [11, 22, 33, 44];

fn main() {
    let shmem = Ishmem::init().expect("init");
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    // SAFETY: globals of this program, used only through the views.
    let (counter, inbox, seed) = unsafe {
        (
            shmem.global(std::ptr::addr_of_mut!(COUNTER), 1),
            shmem.global(std::ptr::addr_of_mut!(INBOX).cast::<u32>(), 64),
            shmem.global(std::ptr::addr_of_mut!(SEED).cast::<u64>(), 4),
        )
    };
    check!(me, seed.read_local() == [11, 22, 33, 44], "initialized globals keep their values");
    shmem.barrier_all(); // every PE has checked before any updates them
    let right = (me + 1) % n;
    let words: Vec<u32> = (0..64).map(|i| (me * 1000 + i) as u32).collect();
    inbox.put(0, &words, right);
    for _ in 0..100 {
        counter.atomic_add(0, 1, 0);
    }
    seed.atomic_fetch_add(me % 4, 1, right);
    shmem.barrier_all();
    let left = (me + n - 1) % n;
    let want: Vec<u32> = (0..64).map(|i| (left * 1000 + i) as u32).collect();
    check!(me, inbox.read_local() == want.as_slice(), "put into a static of another PE");
    if me == 0 {
        check!(me, counter.read_local_at(0) == 100 * n as u64, "AMOs on a static of PE 0");
    }
    let mut got = [0u64; 4];
    seed.get(0, &mut got, me);
    let bumped: u64 = got.iter().zip([11u64, 22, 33, 44]).map(|(g, s)| g - s).sum();
    check!(me, bumped == 1, "fetch_add on a static of another PE");
    shmem.barrier_all();
    if me == 0 {
        println!("rust globals ok on {n} PEs");
    }
}
