//! `fork()`: the child can use every lock the forking thread held and every lock that was free,
//! even with the parent's other threads queued on them, spinning on them or half-way through a
//! slow path (issue 8, defect 6 and item 5).
//!
//! Each test forks from this multi-threaded test process; the child runs a check under an
//! `alarm` (a hang is a failure, not a stuck test), prints nothing (a parent thread may hold
//! stdout's lock) and leaves with `_exit`.
//!
//! No thread may start or exit anywhere in the process while a thread forks: std takes a
//! process-wide mutex when a thread starts and exits (`stack_overflow::thread_info`), and a
//! child forked while a parent thread holds it deadlocks as soon as it starts a thread of its
//! own (gdb on a hung child: every child thread in `thread_info::set_current_info`; a loop of
//! forks beside a thread that spawns and joins threads hung 3 children in 20 000 forks). So
//! this file has its own `main` (no libtest harness, whose threads start and exit between
//! tests) and runs the tests one after another on the main thread; each test starts its
//! threads with [`spawn_started`] and lets none exit while a fork may be in progress.

/// Runs the tests whose names contain one of the free arguments (all without any), except
/// those matching a `--skip` pattern, on the main thread, one after another; a failing test
/// panics, which fails the run. `--list` prints the names; libtest's other options are
/// accepted and ignored (with their values).
fn main() {
    #[cfg(not(kslock_loom))]
    {
        use std::io::Write;
        // libtest options that take a value (`--skip` is handled above them).
        const TAKE_VALUES: [&str; 5] = ["--test-threads", "--logfile", "--format", "--color", "-Z"];
        let (mut filters, mut skips, mut list) = (Vec::new(), Vec::new(), false);
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            match a.as_str() {
                "--list" => list = true,
                "--skip" => skips.extend(args.next()),
                o if TAKE_VALUES.contains(&o) => {
                    args.next();
                }
                o if o.starts_with('-') => {}
                _ => filters.push(a),
            }
        }
        let mut ran = 0;
        for (name, test) in cases::TESTS {
            if (!filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())))
                || skips.iter().any(|s| name.contains(s.as_str()))
            {
                continue;
            }
            if list {
                println!("{name}: test");
                continue;
            }
            print!("test {name} ... ");
            let _ = std::io::stdout().flush();
            test();
            println!("ok");
            ran += 1;
        }
        if !list {
            println!("\ntest result: ok. {ran} passed (fork.rs runs without the libtest harness)");
        }
    }
}

#[cfg(not(kslock_loom))]
mod cases {
    use kslock::{Condvar, Mutex, RawMutex, RawRwSem};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
    use std::sync::Arc;
    use std::time::Duration;

    /// Forks; the child runs `f` (false or a panic = failure) and exits. Returns the child's verdict.
    fn in_child(what: &str, f: impl FnOnce() -> bool) {
        // SAFETY: fork has no preconditions; the child only runs `f` and `_exit`s.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // SAFETY: alarm and _exit are async-signal-safe.
            unsafe { libc::alarm(120) };
            let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(false);
            // SAFETY: as above.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: `pid` is our child; `status` is a valid out-pointer.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(
            !libc::WIFSIGNALED(status),
            "{what}: the child hung or crashed (signal {})",
            libc::WTERMSIG(status)
        );
        assert_eq!(
            libc::WEXITSTATUS(status),
            0,
            "{what}: the child's check failed"
        );
    }

    fn wait_for(what: &str, f: impl Fn() -> bool) {
        let t = std::time::Instant::now();
        while !f() {
            assert!(t.elapsed() < Duration::from_secs(10), "timed out: {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// `std::thread::spawn` that returns once the new thread runs `f`, past std's start-up (module
    /// doc).
    fn spawn_started<T: Send + 'static>(
        f: impl FnOnce() -> T + Send + 'static,
    ) -> std::thread::JoinHandle<T> {
        let started = Arc::new(AtomicBool::new(false));
        let s = started.clone();
        let h = std::thread::spawn(move || {
            s.store(true, Release);
            f()
        });
        wait_for("a thread started", || started.load(Acquire));
        h
    }

    /// Threads in the child contend on `m` and every acquisition is counted exactly once.
    /// `n` threads that each lock and unlock `m` once.
    fn lock_unlock_threads(m: &Arc<RawMutex>, n: usize) -> Vec<std::thread::JoinHandle<()>> {
        (0..n)
            .map(|_| {
                let m = m.clone();
                spawn_started(move || {
                    m.lock();
                    // SAFETY: held.
                    unsafe { m.unlock() };
                })
            })
            .collect()
    }

    fn child_contends(m: &Arc<RawMutex>) -> bool {
        let n = Arc::new(AtomicU64::new(0));
        let hs: Vec<_> = (0..3)
            .map(|_| {
                let (m, n) = (m.clone(), n.clone());
                std::thread::spawn(move || {
                    for _ in 0..2000 {
                        m.lock();
                        n.fetch_add(1, Relaxed);
                        // SAFETY: held.
                        unsafe { m.unlock() };
                    }
                })
            })
            .collect();
        hs.into_iter().all(|h| h.join().is_ok()) && n.load(Relaxed) == 6000 && !m.is_locked()
    }

    fn a_mutex_the_forking_thread_held_with_parent_waiters_works_in_the_child() {
        for fair in [true, false] {
            let m = Arc::new(RawMutex::new());
            m.lock();
            let waiters = lock_unlock_threads(&m, 3);
            wait_for("waiters queued", || m.has_waiters());
            std::thread::sleep(Duration::from_millis(5));
            // Defect 6: `unlock_fair` handed the lock to a waiter that exists only in the parent.
            in_child(&format!("mutex, fair unlock {fair}"), || {
                // SAFETY: the forking thread (this one) held it.
                unsafe {
                    if fair {
                        lock_api::RawMutexFair::unlock_fair(&*m);
                    } else {
                        m.unlock();
                    }
                }
                m.try_lock() && {
                    // SAFETY: held.
                    unsafe { m.unlock() };
                    child_contends(&m)
                }
            });
            // SAFETY: held by this thread (the parent is unaffected by the child).
            unsafe { m.unlock() };
            for h in waiters {
                h.join().unwrap();
            }
        }
    }

    fn an_rwsem_the_forking_thread_held_with_parent_readers_and_writers_works_in_the_child() {
        let l = Arc::new(RawRwSem::new());
        l.write();
        let waiters: Vec<_> = (0..4)
            .map(|i| {
                let l = l.clone();
                spawn_started(move || {
                    // SAFETY (both arms): the lock taken just before is released.
                    if i % 2 == 0 {
                        l.read();
                        unsafe { l.read_unlock() };
                    } else {
                        l.write();
                        unsafe { l.write_unlock() };
                    }
                })
            })
            .collect();
        wait_for("waiters queued", || l.has_waiters());
        std::thread::sleep(Duration::from_millis(5));
        in_child("rwsem", || {
            // SAFETY: the forking thread (this one) holds the write lock.
            unsafe { l.write_unlock() };
            let n = Arc::new(AtomicU64::new(0));
            let hs: Vec<_> = (0..3)
                .map(|i| {
                    let (l, n) = (l.clone(), n.clone());
                    std::thread::spawn(move || {
                        for k in 0..1000 {
                            // SAFETY (both arms): the lock taken just before is released.
                            if (i + k) % 3 == 0 {
                                l.write();
                                n.fetch_add(1, Relaxed);
                                unsafe { l.write_unlock() };
                            } else {
                                l.read();
                                unsafe { l.read_unlock() };
                            }
                        }
                    })
                })
                .collect();
            hs.into_iter().all(|h| h.join().is_ok()) && !l.is_locked() && !l.has_waiters()
        });
        // SAFETY: held by this thread.
        unsafe { l.write_unlock() };
        for h in waiters {
            h.join().unwrap();
        }
    }

    fn a_condvar_with_parent_waiters_notifies_child_waiters() {
        let st = Arc::new((Mutex::new(0u32), Condvar::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let (st, stop) = (st.clone(), stop.clone());
                spawn_started(move || {
                    let mut g = st.0.lock();
                    while !stop.load(Relaxed) {
                        st.1.wait(&mut g);
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(20));
        in_child("condvar", || {
            // The parent's waiters are ghosts at the head of the condvar's queue: a notify must
            // reach the child's own waiter, not a ghost.
            let st2 = st.clone();
            let h = std::thread::spawn(move || {
                let mut g = st2.0.lock();
                while *g == 0 {
                    st2.1.wait(&mut g);
                }
            });
            loop {
                *st.0.lock() = 1;
                st.1.notify_one();
                if h.is_finished() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            h.join().is_ok() && st.1.notify_all() == 0
        });
        stop.store(true, Relaxed);
        while waiters.iter().any(|h| !h.is_finished()) {
            let _g = st.0.lock();
            st.1.notify_all();
            std::thread::yield_now();
        }
        for h in waiters {
            h.join().unwrap();
        }
    }

    fn forks_during_lock_traffic_leave_no_half_done_slow_path() {
        // The forking thread holds `m`; parent threads keep entering and leaving its wait list with
        // timed waits (wait_lock sections) and spin on `spun` (OSQ sections), so forks land in the
        // middle of slow paths all the time. Every child must find `m` and `spun` usable.
        let m = Arc::new(RawMutex::new());
        let spun = Arc::new(RawMutex::new());
        m.lock();
        let stop = Arc::new(AtomicBool::new(false));
        let traffic: Vec<_> = (0..4)
            .map(|i| {
                let (m, spun, stop) = (m.clone(), spun.clone(), stop.clone());
                spawn_started(move || {
                    while !stop.load(Relaxed) {
                        if i % 2 == 0 {
                            assert!(!m.try_lock_for(Duration::from_micros(20)));
                        } else {
                            spun.lock();
                            std::hint::spin_loop();
                            // SAFETY: held.
                            unsafe { spun.unlock() };
                        }
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(5));
        for round in 0..20 {
            in_child(&format!("fork during traffic, round {round}"), || {
                // SAFETY: the forking thread holds `m`.
                unsafe { m.unlock() };
                // `spun` was free or held by a parent thread at the fork: if a ghost holds it, the
                // child cannot use it (as with glibc), so only check it when it is free.
                let spun_ok = if spun.try_lock_for(Duration::from_millis(50)) {
                    // SAFETY: held.
                    unsafe { spun.unlock() };
                    child_contends(&spun)
                } else {
                    true
                };
                spun_ok && child_contends(&m)
            });
        }
        stop.store(true, Relaxed);
        for h in traffic {
            h.join().unwrap();
        }
        // SAFETY: held by this thread.
        unsafe { m.unlock() };
    }

    fn concurrent_forks_each_wait_for_the_slow_paths_in_flight() {
        // Two threads fork at once (glibc runs their fork handlers in parallel) while parent threads
        // enter and leave the wait lists of the locks they hold. The first fork to finish must not
        // let slow paths resume while the other has yet to copy the process: every child must find
        // its forker's lock usable.
        let locks: Arc<Vec<RawMutex>> = Arc::new((0..2).map(|_| RawMutex::new()).collect());
        // `held`: both forkers hold their locks; `go`: the traffic threads run, fork away.
        let held = Arc::new(std::sync::Barrier::new(3));
        let go = Arc::new(std::sync::Barrier::new(3));
        // `done`: both forkers are through their forks; neither exits before (module doc).
        let done = Arc::new(std::sync::Barrier::new(2));
        let stop = Arc::new(AtomicBool::new(false));
        let forkers: Vec<_> = (0..2)
            .map(|i| {
                let (locks, held, go, done) =
                    (locks.clone(), held.clone(), go.clone(), done.clone());
                spawn_started(move || {
                    locks[i].lock();
                    held.wait();
                    go.wait();
                    // A failed fork panics only after `done`, so the other forker is not left
                    // waiting there.
                    let forks = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        for round in 0..20 {
                            in_child(&format!("concurrent fork {i}, round {round}"), || {
                                // SAFETY: the forking thread holds `locks[i]`.
                                unsafe { locks[i].unlock() };
                                let m = Arc::new(RawMutex::new());
                                child_contends(&m) && {
                                    locks[i].lock();
                                    // SAFETY: held.
                                    unsafe { locks[i].unlock() };
                                    true
                                }
                            });
                        }
                    }));
                    done.wait();
                    // SAFETY: held by this thread.
                    unsafe { locks[i].unlock() };
                    if let Err(e) = forks {
                        std::panic::resume_unwind(e);
                    }
                })
            })
            .collect();
        held.wait();
        let traffic: Vec<_> = (0..4)
            .map(|t| {
                let (locks, stop) = (locks.clone(), stop.clone());
                spawn_started(move || {
                    while !stop.load(Relaxed) {
                        // Timed waits: every one takes the wait_lock to queue and again to leave.
                        if locks[t % 2].try_lock_for(Duration::from_micros(20)) {
                            // SAFETY: held (only after its forker is done).
                            unsafe { locks[t % 2].unlock() };
                        }
                    }
                })
            })
            .collect();
        go.wait();
        for h in forkers {
            h.join().unwrap();
        }
        stop.store(true, Relaxed);
        for h in traffic {
            h.join().unwrap();
        }
    }

    fn a_child_can_start_many_threads() {
        // The pool grows in the child (new segments, ghosts never reused).
        // Eight parent threads with records, alive across the fork (they exit when `release` is
        // dropped: no thread exits during the fork).
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let wait = Arc::new(std::sync::Mutex::new(wait));
        let keep: Vec<_> = (0..8)
            .map(|_| {
                let wait = wait.clone();
                spawn_started(move || {
                    let m = Mutex::new(());
                    drop(m.lock());
                    let _ = wait.lock().unwrap_or_else(|e| e.into_inner()).recv();
                })
            })
            .collect();
        in_child("threads in the child", || {
            let m: Arc<RawMutex> = Arc::new(RawMutex::new());
            let hs = lock_unlock_threads(&m, 100);
            hs.into_iter().all(|h| h.join().is_ok())
        });
        drop(release);
        for h in keep {
            h.join().unwrap();
        }
    }

    /// `(name, test)` pairs, each name spelled once (as its function's).
    macro_rules! tests {
        ($($f:ident),* $(,)?) => { &[$((stringify!($f), $f as fn())),*] };
    }

    /// The tests, in the order they run.
    pub(crate) const TESTS: &[(&str, fn())] = tests![
        a_mutex_the_forking_thread_held_with_parent_waiters_works_in_the_child,
        an_rwsem_the_forking_thread_held_with_parent_readers_and_writers_works_in_the_child,
        a_condvar_with_parent_waiters_notifies_child_waiters,
        forks_during_lock_traffic_leave_no_half_done_slow_path,
        concurrent_forks_each_wait_for_the_slow_paths_in_flight,
        a_child_can_start_many_threads,
    ];
}
