//! `lockbench`: reproduces the kernel's lock experiments in user space and
//! measures kslock's locks against the locks people use (Rust std,
//! parking_lot, glibc pthread, a TTAS spinlock).
//!
//! Layout: [`locks`] (the `BenchLock` trait, adapters, registry), [`runner`]
//! (the timed loop and exclusion check), [`workload`] (file/mmap/tree),
//! [`matrix`] (plans, interleaved repeats, bounds, table), [`scoreboard`]
//! (kslock against the best peer per family), [`results`] (JSON/CSV/SVG
//! export and the environment record), [`seeds`], [`compare`], [`timeline`]
//! (where one cell's time goes), [`uncontended`] (one lock + unlock alone), [`probe`] (the cross-CPU line round
//! trip around every run), [`cli`].

pub mod cli;
pub mod compare;
pub mod locks;
pub mod matrix;
pub mod probe;
pub mod results;
pub mod runner;
pub mod scoreboard;
pub mod seeds;
pub mod stats;
pub mod timeline;
pub mod uncontended;
pub mod workload;
