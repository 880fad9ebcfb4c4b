//! Support for the Rust PE programs in `src/bin` (failures name the PE)
//! and the multi-PE harness of the integration tests ([`harness`]).

pub mod harness;

/// Fails the PE (exit status 1, so ishmrun ends the job) with a message.
#[macro_export]
macro_rules! check {
    ($me:expr, $cond:expr, $($fmt:tt)+) => {
        if !$cond {
            eprintln!("PE {}: {}:{}: check failed: {}: {}", $me, file!(), line!(), stringify!($cond), format!($($fmt)+));
            std::process::exit(1);
        }
    };
}
