//! ishmem-rs runtime: the layers under every binding, bottom to top (each
//! module uses only modules on its own level or below; the `layers` test
//! checks the import graph against this list):
//!
//! 1. plain types and system calls: [`phase`] (lifecycle phase, this PE's
//!    number), [`env`] (the one environment table), [`types`], [`ctrl`]
//!    (control segment layout), [`collsig`] (collective call signatures),
//!    [`device_state`] and [`sync_words`] (state and words device code
//!    reads), [`alloc`], [`mem`], [`dynlib`] (loading a foreign library's
//!    function table);
//! 2. errors and waiting: [`error`], [`wait`], [`dataseg`], [`ring`] (the
//!    reverse-offload ring's layout and messages);
//! 3. backends behind traits: [`remote`] (`RemoteOps`: the MPI plugin and
//!    a host OpenSHMEM library) and [`device`] (`Device`: heaps, kernel
//!    runtime, ring server, device queues);
//! 4. bootstrap: [`boot`] (one module per way a job starts, each returning
//!    a `JobLayout`);
//! 5. the routing decision: [`route`] (local pointer or proxy);
//! 6. the validating core: [`state`] (the running PE and its checks) and
//!    the operations on it: [`rma`], [`amo`], [`symheap`], [`team`],
//!    [`coll`], [`activeset`], [`lock`], [`ctx`], [`queue`], [`serve`],
//!    and [`watch`] (the watchdog thread: lost PEs, device faults,
//!    deadlocks);
//! 7. the lifecycle: [`core`] (init, finalize, the running state).
//!
//! The C ABI (`bindings/c`) and the safe Rust crate (`bindings/rust`) are
//! thin layers over [`core`] and [`state`]. See `docs/architecture.md`.

// The core's entry points take the user's raw pointers and dereference
// them only after checking that the whole range lies inside a mapped
// symmetric segment (or, for local buffers, that it is non-null, which is
// all the C API can check); they are safe functions on purpose, like the
// OpenSHMEM routines they implement.
#![allow(clippy::not_unsafe_ptr_arg_deref, clippy::too_many_arguments)]

pub mod alloc;
pub mod collsig;
pub mod ctrl;
pub mod device_state;
pub mod dynlib;
pub mod env;
pub mod mem;
pub mod phase;
pub mod sync_words;
pub mod types;

pub mod dataseg;
pub mod error;
pub mod ring;
pub mod wait;

pub mod device;
pub mod remote;

pub mod boot;

pub mod route;

pub mod activeset;
pub mod amo;
pub mod coll;
pub mod ctx;
pub mod lock;
pub mod queue;
pub mod rma;
pub mod serve;
pub mod stage;
pub mod state;
pub mod symheap;
pub mod team;
pub mod watch;

pub mod core;
