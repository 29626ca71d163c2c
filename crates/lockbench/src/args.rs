//! Argument types the subcommands share: output format, the run options, thread lists and the
//! lock-name parsers (every bad value is a usage error listing the valid ones, exit 2).

use std::path::PathBuf;

use clap::builder::PossibleValuesParser;
use clap::{Args, ValueEnum};

use crate::registry;
use crate::session::Timing;

/// What to print on stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Csv,
    Json,
}

/// Options shared by every measuring command.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct RunArgs {
    /// Measured seconds per cell.
    #[arg(long, value_parser = positive_f64)]
    pub secs: Option<f64>,
    /// Warm-up seconds per cell (not measured).
    #[arg(long, value_parser = nonneg_f64)]
    pub warmup: Option<f64>,
    /// Runs per cell; the table reports the median and min-max.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Pin worker i to CPU i mod online CPUs.
    #[arg(long)]
    pub pin: bool,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Also write results.json, results.csv and plot.svg here (rewritten
    /// after every cell).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print kslock's contention statistics (top locks by wait, kslock::stats) after each
    /// cell on stderr (a build with feature `stats`).
    #[arg(long)]
    pub stats: bool,
}

impl RunArgs {
    /// The timing these options ask for, `secs` and `warmup` where they give none.
    pub fn timing(&self, secs: f64, warmup: f64) -> Timing {
        Timing {
            secs: self.secs.unwrap_or(secs),
            warmup: self.warmup.unwrap_or(warmup),
            repeat: self.repeat as usize,
            pin: self.pin,
        }
    }
}

/// `--locks`: any registered lock, or the aliases all, mutexes, rwlocks.
pub fn lock_parser() -> PossibleValuesParser {
    let mut v: Vec<&'static str> = registry::names();
    v.extend(["all", "mutexes", "rwlocks"]);
    PossibleValuesParser::new(v)
}

/// `--lock`: one registered lock.
pub fn single_lock_parser() -> PossibleValuesParser {
    PossibleValuesParser::new(registry::names())
}

/// Parsed `--threads`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadList(pub Vec<usize>);

/// `--threads`: comma-separated counts and ranges `A..B` (doubling from A, ending at B),
/// sorted, each once.
pub fn parse_threads(s: &str) -> Result<ThreadList, String> {
    const HELP: &str =
        "expected comma-separated thread counts or ranges A..B (doubling), e.g. 1,2,4..96";
    let mut v = Vec::new();
    for item in s.split(',').map(str::trim) {
        let num = |x: &str| -> Result<usize, String> {
            match x.trim().parse::<usize>() {
                Ok(n) if (1..=4096).contains(&n) => Ok(n),
                _ => Err(format!("bad thread count `{x}` (1..=4096); {HELP}")),
            }
        };
        if let Some((a, b)) = item.split_once("..") {
            let (a, b) = (num(a)?, num(b)?);
            if a > b {
                return Err(format!("empty range `{item}`; {HELP}"));
            }
            let mut t = a;
            while t < b {
                v.push(t);
                t *= 2;
            }
            v.push(b);
        } else {
            v.push(num(item)?);
        }
    }
    v.sort_unstable();
    v.dedup();
    Ok(ThreadList(v))
}

/// A positive, finite number of seconds.
pub fn positive_f64(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() => Ok(x),
        _ => Err(format!("`{s}` is not a positive number of seconds")),
    }
}

/// A finite number of seconds, 0 or more.
pub fn nonneg_f64(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x >= 0.0 && x.is_finite() => Ok(x),
        _ => Err(format!("`{s}` is not a number of seconds >= 0")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_lists() {
        assert_eq!(
            parse_threads("1,2,4..96").unwrap().0,
            vec![1, 2, 4, 8, 16, 32, 64, 96]
        );
        assert_eq!(parse_threads("3").unwrap().0, vec![3]);
        assert_eq!(parse_threads("8,1,8").unwrap().0, vec![1, 8]);
        assert_eq!(parse_threads("2..2").unwrap().0, vec![2]);
        assert!(parse_threads("0").is_err());
        assert!(parse_threads("8..2").is_err());
        assert!(parse_threads("x").is_err());
        assert!(parse_threads("1,,2").is_err());
    }
}
