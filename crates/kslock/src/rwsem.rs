//! The kernel rw-semaphore (being written; see issue 3).
