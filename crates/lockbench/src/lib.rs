//! `lockbench`: reproduces the kernel's lock experiments in user space and
//! measures kslock's locks against the locks people use (Rust std,
//! parking_lot, glibc pthread, a TTAS spinlock).
//!
//! # Layers
//!
//! Each module imports only modules listed before it (none imports one that imports it back):
//!
//! 1. [`util`] (cache padding, the pause unit), [`stats`] (histogram, usage, PRNG, bound)
//! 2. [`locks`]: the `BenchLock` trait and the adapters (kslock's, the peers'), and the
//!    mutex + condvar pairs (`locks::condvar`)
//! 3. [`excl`] (the exclusion checker), [`probe`] (the cross-CPU line round trip)
//! 4. [`runner`]: the timed loop over a `Workload`
//! 5. [`workload`]: the loop bodies (matrix, file, mmap, tree, random, data, condvar) and the
//!    per-lock entry points; [`timeline`] (every step of one cell stamped), [`uncontended`] (one
//!    lock + unlock alone)
//! 6. [`registry`]: lock names → adapters' runner functions
//! 7. [`cell`] (one cell's result) → [`scoreboard`] (kslock against the best peer per family)
//!    → [`results`] (the report: JSON/CSV/SVG export and the environment record)
//! 8. [`session`] (plans of cells, interleaved repeats, bounds), [`table`] (the human table)
//! 9. [`args`] (argument types the subcommands share)
//! 10. [`cmd`]: the subcommands, each with its arguments and its run
//! 11. [`cli`]: parse and dispatch

pub mod args;
pub mod cell;
pub mod cli;
pub mod cmd;
pub mod excl;
pub mod locks;
pub mod probe;
pub mod registry;
pub mod results;
pub mod runner;
pub mod scoreboard;
pub mod session;
pub mod stats;
pub mod table;
pub mod timeline;
pub mod uncontended;
pub mod util;
pub mod workload;
