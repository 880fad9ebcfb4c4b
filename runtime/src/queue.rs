//! Device-queue operations (Intel SHMEM's `ishmemx_*_on_queue`): the
//! arguments are checked here as for the host call, then the device
//! enqueues the operation on the program's queue after its dependencies.
//! The C ABI and the Rust crate both call these.

use crate::device::*;
use crate::env::DeviceKind;
use crate::error::fatal;
use crate::state::State;
use std::ffi::c_void;

impl State {
    /// Enqueues `op` on `queue` (the device runtime's queue, e.g. a
    /// `cl_command_queue` of this PE's context) after the events in `deps`;
    /// returns the operation's event (the program releases it).
    pub fn on_queue(&self, call: &str, op: QueueOp, queue: *mut c_void, deps: &[*mut c_void]) -> *mut c_void {
        // (A CUDA stream may be 0: the legacy default stream.)
        if queue.is_null() && self.device.kind() != DeviceKind::Cuda {
            fatal(call, format_args!("queue is a null pointer"))
        }
        match op {
            QueueOp::Put { dest, nbytes, pe, .. } => {
                self.check_pe(call, pe);
                self.sym_extent(call, "dest", dest as *const u8, nbytes);
            }
            QueueOp::Get { source, nbytes, pe, .. } => {
                self.check_pe(call, pe);
                self.sym_extent(call, "source", source as *const u8, nbytes);
            }
            QueueOp::PutSignal { dest, nbytes, sig_addr, sig_op, pe, .. } => {
                self.signal_op_code(call, sig_op);
                self.check_pe(call, pe);
                self.sym_extent(call, "dest", dest as *const u8, nbytes);
                self.sym_extent(call, "sig_addr", sig_addr as *const u8, 8);
                self.check_aligned(call, "sig_addr", sig_addr as *const u8, 8);
            }
            QueueOp::SignalWaitUntil { sig_addr, cmp, .. } => {
                crate::amo::check_cmp(call, cmp);
                self.sym_extent(call, "sig_addr", sig_addr as *const u8, 8);
                self.check_aligned(call, "sig_addr", sig_addr as *const u8, 8);
            }
            QueueOp::BarrierAll | QueueOp::Quiet | QueueOp::SyncAll => {}
            QueueOp::Coll(_) => fatal(call, format_args!("collectives go through State::coll_on_queue")),
        }
        self.device.enqueue(op, queue, deps).unwrap_or_else(|e| fatal(call, format_args!("{e}")))
    }

    /// Launches collective `c` on `queue` (a CUDA stream) after checking
    /// its arguments as the host call does: 0, or -1 (nothing launched)
    /// when the team is `TEAM_INVALID` or has no slot on this PE.
    pub fn coll_on_queue(&self, call: &str, c: QueueColl, queue: *mut c_void) -> i32 {
        let Some(t) = self.team(call, c.team) else { return -1 };
        let n = t.size;
        let len = |count: usize| -> usize {
            c.nelems
                .checked_mul(c.elem)
                .and_then(|b| b.checked_mul(count))
                .unwrap_or_else(|| fatal(call, format_args!("{} elements of {} bytes overflow", c.nelems, c.elem)))
        };
        match c.kind {
            COLL_TEAM_SYNC => {}
            COLL_BROADCAST => {
                if c.root < 0 || c.root as usize >= n {
                    fatal(call, format_args!("PE_root {} is not a PE of the team (team size {n})", c.root))
                }
                self.sym_extent(call, "dest", c.dest as *const u8, len(1));
                self.sym_extent(call, "source", c.source as *const u8, len(1));
            }
            COLL_FCOLLECT | COLL_ALLTOALL => {
                self.sym_extent(call, "dest", c.dest as *const u8, len(n));
                let src = if c.kind == COLL_ALLTOALL { len(n) } else { len(1) };
                self.sym_extent(call, "source", c.source as *const u8, src);
            }
            // collect: this member's own block; the others' counts are
            // theirs (dest is checked against the heap at its start).
            COLL_COLLECT => {
                self.sym_extent(call, "dest", c.dest as *const u8, len(1));
                self.sym_extent(call, "source", c.source as *const u8, len(1));
            }
            COLL_REDUCE | COLL_INSCAN | COLL_EXSCAN => {
                self.sym_extent(call, "dest", c.dest as *const u8, len(1));
                self.sym_extent(call, "source", c.source as *const u8, len(1));
            }
            k => fatal(call, format_args!("unknown collective {k}")),
        }
        self.device.enqueue(QueueOp::Coll(c), queue, &[]).unwrap_or_else(|e| fatal(call, format_args!("{e}")));
        0
    }

    /// Waits for device-runtime events (as returned by [`State::on_queue`])
    /// and releases them.
    pub fn wait_device_events(&self, call: &str, events: &[*mut c_void]) {
        self.device.wait(events).unwrap_or_else(|e| fatal(call, format_args!("{e}")))
    }

    /// A native handle of this PE's device runtime (opened on first use).
    pub fn device_native(&self, call: &str, what: Native) -> *mut c_void {
        self.device.native(what).unwrap_or_else(|e| fatal(call, format_args!("{e}")))
    }

    /// Builds a device program from `il` linked with the device library,
    /// with this PE's state installed.
    pub fn link_device_program(&self, call: &str, il: &[u8]) -> *mut c_void {
        if il.is_empty() {
            fatal(call, format_args!("the program is empty"))
        }
        self.device.link_program(il).unwrap_or_else(|e| fatal(call, format_args!("{e}")))
    }

    /// `ishmemx_cl_link_program_in`: as `link_device_program`, in the
    /// OpenCL context `context` on device `device` (a SYCL runtime's).
    pub fn link_device_program_in(
        &self, call: &str, il: &[u8], context: *mut c_void, device: *mut c_void,
    ) -> *mut c_void {
        if il.is_empty() {
            fatal(call, format_args!("the program is empty"))
        }
        if context.is_null() || device.is_null() {
            fatal(call, format_args!("context or device is a null handle"))
        }
        let p = self.device.link_program_in(il, context, device).unwrap_or_else(|e| fatal(call, format_args!("{e}")));
        if self.config().debug {
            crate::error::emit_line(&format!(
                "ishmem: PE {}: {call}: a program of another OpenCL context ({} bytes of SPIR-V) linked with the device library",
                self.my_pe,
                il.len()
            ));
        }
        p
    }
}
