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

pub mod activeset;
pub mod alloc;
pub mod amo;
pub mod bootstrap;
pub mod coll;
pub mod core;
pub mod ctx;
pub mod ctrl;
pub mod device;
pub mod dataseg;
pub mod device_state;
pub mod lock;
pub mod env;
pub mod error;
pub mod team;
pub mod transport;
pub mod wait;
