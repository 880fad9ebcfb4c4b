//! ishmem-rs runtime: the layers under every binding.
//!
//! * plain types: [`env`], [`device_state`], [`ctrl`];
//! * unsafe backends behind traits: [`device::Device`] (where heaps live),
//!   [`transport::Transport`] (how peers are reached);
//! * bootstrap with the `ishmrun` launcher: [`bootstrap`];
//! * the validating core: [`core`] (lifecycle, RMA, ordering, barriers,
//!   symmetric heap management), with errors reported by [`error`].
//!
//! The C ABI (`bindings/c`) and the safe Rust crate (`bindings/rust`) are
//! thin layers over [`core`]. See `docs/architecture.md`.

// The core's entry points take the user's raw pointers and dereference
// them only after checking that the whole range lies inside a mapped
// symmetric segment (or, for local buffers, that it is non-null, which is
// all the C API can check); they are safe functions on purpose, like the
// OpenSHMEM routines they implement.
#![allow(clippy::not_unsafe_ptr_arg_deref, clippy::too_many_arguments)]

pub mod activeset;
pub mod alloc;
pub mod amo;
pub mod bootstrap;
pub mod coll;
pub mod core;
pub mod ctrl;
pub mod ctx;
pub mod dataseg;
pub mod device;
pub mod device_state;
pub mod env;
pub mod error;
pub mod lock;
pub mod node;
pub mod opencl;
pub mod proxy;
pub mod ring;
pub mod shmem_proxy;
pub mod team;
pub mod transport;
pub mod wait;
