//! x
#[no_mangle]
pub extern "C" fn kslock_preload_version() -> *const u8 {
    b"0\0".as_ptr()
}
