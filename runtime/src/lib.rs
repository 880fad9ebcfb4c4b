//! ishmem-rs runtime: the layers under every binding, bottom to top (each
//! module uses only modules on its own level or below; the `layers` test
//! checks the import graph against this list):
//!
//! 1. plain types and system calls: `phase` (lifecycle phase, this PE's
//!    number), `env` (the one environment table), `types`, `ctrl`
//!    (control segment layout), `collsig` (collective call signatures),
//!    `device_state` and `sync_words` (state and words device code
//!    reads), `alloc`, `mem`, `dynlib` (loading a foreign library's
//!    function table);
//! 2. errors and waiting: `error`, `wait`, `dataseg`, `ring` (the
//!    reverse-offload ring's layout and messages);
//! 3. backends behind traits: `remote` (`RemoteOps`: the MPI plugin and
//!    a host OpenSHMEM library) and `device` (`Device`: heaps, kernel
//!    runtime, ring server, device queues);
//! 4. bootstrap: `boot` (one module per way a job starts, each returning
//!    a `JobLayout`);
//! 5. the routing decision: `route` (local pointer or proxy);
//! 6. the validating core: `state` (the running PE and its checks) and
//!    the operations on it: `rma`, `amo`, `symheap`, `team`,
//!    `coll`, `stage`, `activeset`, `lock`, `ctx`, `queue`, `serve`,
//!    and `watch` (the watchdog thread: lost PEs, device faults,
//!    deadlocks);
//! 7. the lifecycle: `core` (init, finalize, the running state);
//! 8. the public surface: `api`, the one public module (re-exports).
//!
//! The C ABI (`bindings/c`) and the safe Rust crate (`bindings/rust`) are
//! thin layers over the lifecycle and the running state; they, the
//! generator and the launcher reach the runtime through `api` alone
//! (every other module is private to the crate; the `layers` test checks
//! both). See `docs/architecture.md`.

// The core's entry points take the user's raw pointers and dereference
// them only after checking that the whole range lies inside a mapped
// symmetric segment (or, for local buffers, that it is non-null, which is
// all the C API can check); they are safe functions on purpose, like the
// OpenSHMEM routines they implement.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

pub(crate) mod alloc;
pub(crate) mod collsig;
pub(crate) mod ctrl;
pub(crate) mod device_state;
pub(crate) mod dynlib;
pub(crate) mod env;
pub(crate) mod mem;
pub(crate) mod phase;
pub(crate) mod sync_words;
pub(crate) mod types;

pub(crate) mod dataseg;
pub(crate) mod error;
pub(crate) mod ring;
pub(crate) mod wait;

pub(crate) mod device;
pub(crate) mod remote;

pub(crate) mod boot;

pub(crate) mod route;

pub(crate) mod activeset;
pub(crate) mod amo;
pub(crate) mod coll;
pub(crate) mod ctx;
pub(crate) mod lock;
pub(crate) mod queue;
pub(crate) mod rma;
pub(crate) mod serve;
pub(crate) mod stage;
pub(crate) mod state;
pub(crate) mod symheap;
pub(crate) mod team;
pub(crate) mod watch;

pub(crate) mod core;

pub mod api;
