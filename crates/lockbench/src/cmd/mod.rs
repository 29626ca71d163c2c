//! The subcommands: each module owns its arguments and its run (the command line parses and
//! dispatches to them).

pub mod compare;
pub mod matrix;
pub mod seeds;
pub mod suite;
pub mod timeline;
pub mod uncontended;
pub mod workload;
