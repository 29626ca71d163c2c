//! C ABI for kslock. Placeholder: the C library and the pthread interposer are a later issue.
