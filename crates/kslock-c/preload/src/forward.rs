//! Forwarding to glibc's own lock functions, for the objects kslock does not serve.
//!
//! The preload defines `pthread_mutex_lock` & co., so a plain reference to those names from
//! inside it would bind to itself. glibc's implementations are found instead by looking them
//! up, with their symbol version, in `libc.so.6`'s dynamic symbol table:
//!
//! * `dl_iterate_phdr` finds the loaded `libc.so.6` and its `PT_DYNAMIC`;
//! * its GNU hash table, `.dynsym`, `.dynstr`, `.gnu.version` and `.gnu.version_d` give the
//!   address of `name@version` (or, without a version, of the default `name@@...`);
//!   `pthread_cond_*` are looked up at `GLIBC_2.3.2`, the condvar ABI whose 48-byte layout the
//!   preload's objects share (`GLIBC_2.2.5` is the old compat condvar).
//!
//! Why not `dlsym`/`dlvsym`: they may allocate (error strings, lazy binding) and take the
//! loader lock, and an allocator whose mutexes are pthread mutexes (jemalloc) calls into the
//! preload before constructors run. This lookup allocates nothing and calls nothing but
//! `dl_iterate_phdr`. It runs once, from the preload's ELF constructor, and again lazily only if
//! a fallback object is used before that constructor ran (it is idempotent: racing callers
//! store the same addresses). Only fallback objects (process-shared, robust, PI, PP) ever need
//! it, and no allocator uses those.

use core::ffi::{c_char, c_int, c_void, CStr};
use core::sync::atomic::{AtomicUsize, Ordering::*};

macro_rules! forwards {
    ($( $f:ident = $name:literal @ $ver:expr, $abi:literal fn($($a:ident : $t:ty),*); )*) => {
        /// The functions looked up: (name, version or `None` for the default version).
        const TABLE: &[(&CStr, Option<&CStr>)] = &[ $( ($name, $ver) ),* ];
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        #[repr(usize)]
        enum Idx { $($f),* }
        /// Resolved addresses (0 = not yet), indexed like `TABLE`.
        static ADDR: [AtomicUsize; TABLE.len()] = [const { AtomicUsize::new(0) }; TABLE.len()];
        $(
            /// glibc's own implementation of this function.
            ///
            /// # Safety
            /// As for the glibc function (valid pointers to the objects it takes).
            pub(crate) unsafe fn $f($($a: $t),*) -> c_int {
                let p = addr(Idx::$f as usize);
                // SAFETY: `p` is the address of the glibc function of this name and version,
                // whose C prototype is this one.
                let f: unsafe extern $abi fn($($t),*) -> c_int = unsafe { core::mem::transmute(p) };
                // SAFETY: forwarded caller contract.
                unsafe { f($($a),*) }
            }
        )*
    };
}

type M = *mut libc::pthread_mutex_t;
type R = *mut libc::pthread_rwlock_t;
type C = *mut libc::pthread_cond_t;
type Ts = *const libc::timespec;
type Ck = libc::clockid_t;

forwards! {
    mutex_init = c"pthread_mutex_init" @ None, "C" fn(m: M, a: *const libc::pthread_mutexattr_t);
    mutex_destroy = c"pthread_mutex_destroy" @ None, "C" fn(m: M);
    mutex_lock = c"pthread_mutex_lock" @ None, "C" fn(m: M);
    mutex_trylock = c"pthread_mutex_trylock" @ None, "C" fn(m: M);
    mutex_timedlock = c"pthread_mutex_timedlock" @ None, "C" fn(m: M, t: Ts);
    mutex_clocklock = c"pthread_mutex_clocklock" @ None, "C" fn(m: M, c: Ck, t: Ts);
    mutex_unlock = c"pthread_mutex_unlock" @ None, "C" fn(m: M);
    mutex_consistent = c"pthread_mutex_consistent" @ None, "C" fn(m: M);
    rwlock_init = c"pthread_rwlock_init" @ None, "C" fn(r: R, a: *const libc::pthread_rwlockattr_t);
    rwlock_destroy = c"pthread_rwlock_destroy" @ None, "C" fn(r: R);
    rwlock_rdlock = c"pthread_rwlock_rdlock" @ None, "C" fn(r: R);
    rwlock_tryrdlock = c"pthread_rwlock_tryrdlock" @ None, "C" fn(r: R);
    rwlock_clockrdlock = c"pthread_rwlock_clockrdlock" @ None, "C" fn(r: R, c: Ck, t: Ts);
    rwlock_wrlock = c"pthread_rwlock_wrlock" @ None, "C" fn(r: R);
    rwlock_trywrlock = c"pthread_rwlock_trywrlock" @ None, "C" fn(r: R);
    rwlock_clockwrlock = c"pthread_rwlock_clockwrlock" @ None, "C" fn(r: R, c: Ck, t: Ts);
    rwlock_unlock = c"pthread_rwlock_unlock" @ None, "C" fn(r: R);
    cond_init = c"pthread_cond_init" @ Some(c"GLIBC_2.3.2"), "C" fn(c: C, a: *const libc::pthread_condattr_t);
    cond_destroy = c"pthread_cond_destroy" @ Some(c"GLIBC_2.3.2"), "C" fn(c: C);
    cond_signal = c"pthread_cond_signal" @ Some(c"GLIBC_2.3.2"), "C" fn(c: C);
    cond_broadcast = c"pthread_cond_broadcast" @ Some(c"GLIBC_2.3.2"), "C" fn(c: C);
    // The waits are cancellation points: glibc unwinds through the caller, so "C-unwind".
    cond_wait = c"pthread_cond_wait" @ Some(c"GLIBC_2.3.2"), "C-unwind" fn(c: C, m: M);
    cond_timedwait = c"pthread_cond_timedwait" @ Some(c"GLIBC_2.3.2"), "C-unwind" fn(c: C, m: M, t: Ts);
    cond_clockwait = c"pthread_cond_clockwait" @ None, "C-unwind" fn(c: C, m: M, k: Ck, t: Ts);
}

/// The address of `TABLE[i]`, resolving the table first if needed.
fn addr(i: usize) -> usize {
    // Acquire pairs with the Release stores in `resolve_all` (the address is all we read,
    // but it must be the complete value).
    let p = ADDR[i].load(Acquire);
    if p != 0 {
        return p;
    }
    resolve_all();
    let p = ADDR[i].load(Acquire);
    if p == 0 {
        crate::die(b"kslock_preload: a glibc lock function was not found in libc.so.6\n");
    }
    p
}

/// Resolves every entry of `TABLE` (the ELF constructor calls this).
pub(crate) fn resolve_all() {
    // SAFETY: the callback only reads the loaded objects' program headers and dynamic tables,
    // which the loader keeps mapped while it runs.
    unsafe { libc::dl_iterate_phdr(Some(visit), core::ptr::null_mut()) };
}

/// The tables of one loaded object that a lookup needs (absolute addresses).
struct Dyn {
    base: usize,
    symtab: usize,
    strtab: usize,
    gnu_hash: usize,
    versym: usize,
    verdef: usize,
}

/// Elf64_Dyn.
#[repr(C)]
struct DynEntry {
    d_tag: i64,
    d_val: u64,
}

/// Elf64_Sym.
#[repr(C)]
struct Sym {
    name: u32,
    info: u8,
    other: u8,
    shndx: u16,
    value: u64,
    size: u64,
}

unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _: usize, _: *mut c_void) -> c_int {
    // SAFETY: the loader passes a valid `dl_phdr_info` for the duration of the call.
    let info = unsafe { &*info };
    if info.dlpi_name.is_null() {
        return 0;
    }
    // SAFETY: `dlpi_name` is a NUL-terminated string owned by the loader.
    let name = unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes();
    if !name.ends_with(b"/libc.so.6") && name != b"libc.so.6" {
        return 0;
    }
    // SAFETY: libc.so.6's program headers and dynamic section are mapped (it is loaded).
    let Some(d) = (unsafe { dyn_tables(info) }) else {
        return 0;
    };
    for (i, (sym, ver)) in TABLE.iter().enumerate() {
        // SAFETY: `d` describes the mapped tables of libc.so.6.
        if let Some(a) = unsafe { lookup(&d, sym.to_bytes(), ver.map(CStr::to_bytes)) } {
            // Release: see `addr`.
            ADDR[i].store(a, Release);
        }
    }
    1
}

/// Reads the dynamic section of the object `info` describes.
///
/// # Safety
/// `info` describes a loaded object.
unsafe fn dyn_tables(info: &libc::dl_phdr_info) -> Option<Dyn> {
    let base = info.dlpi_addr as usize;
    let mut dynamic = 0usize;
    for k in 0..info.dlpi_phnum as usize {
        // SAFETY: `dlpi_phdr` has `dlpi_phnum` entries.
        let ph = unsafe { &*info.dlpi_phdr.add(k) };
        if ph.p_type == libc::PT_DYNAMIC {
            dynamic = base + ph.p_vaddr as usize;
        }
    }
    if dynamic == 0 {
        return None;
    }
    let mut d = Dyn {
        base,
        symtab: 0,
        strtab: 0,
        gnu_hash: 0,
        versym: 0,
        verdef: 0,
    };
    // Most loaders relocate these entries in place; a value below the base is still an offset.
    let abs = |v: u64| {
        if (v as usize) < base {
            base + v as usize
        } else {
            v as usize
        }
    };
    let mut p = dynamic as *const DynEntry;
    loop {
        // SAFETY: the dynamic section is an array terminated by DT_NULL.
        let e = unsafe { &*p };
        match e.d_tag as u64 {
            0 => break,                               // DT_NULL
            6 => d.symtab = abs(e.d_val),             // DT_SYMTAB
            5 => d.strtab = abs(e.d_val),             // DT_STRTAB
            0x6fff_fef5 => d.gnu_hash = abs(e.d_val), // DT_GNU_HASH
            0x6fff_fff0 => d.versym = abs(e.d_val),   // DT_VERSYM
            0x6fff_fffc => d.verdef = abs(e.d_val),   // DT_VERDEF
            _ => {}
        }
        // SAFETY: not past DT_NULL yet.
        p = unsafe { p.add(1) };
    }
    (d.symtab != 0 && d.strtab != 0 && d.gnu_hash != 0 && d.versym != 0).then_some(d)
}

/// The NUL-terminated string at `off` in the string table.
///
/// # Safety
/// `d.strtab + off` is inside the mapped string table.
unsafe fn str_at(d: &Dyn, off: u32) -> &'static [u8] {
    // SAFETY: forwarded caller contract; ELF strings are NUL-terminated.
    unsafe { CStr::from_ptr((d.strtab + off as usize) as *const c_char) }.to_bytes()
}

/// The name of version index `ndx` in the version definitions.
///
/// # Safety
/// `d` describes a loaded object.
unsafe fn version_name(d: &Dyn, ndx: u16) -> Option<&'static [u8]> {
    let mut p = d.verdef;
    if p == 0 {
        return None;
    }
    loop {
        // Elf64_Verdef: vd_version u16, vd_flags u16, vd_ndx u16, vd_cnt u16, vd_hash u32,
        // vd_aux u32, vd_next u32. SAFETY: inside the mapped verdef chain.
        let (vd_ndx, vd_aux, vd_next) = unsafe {
            (
                *((p + 4) as *const u16),
                *((p + 12) as *const u32),
                *((p + 16) as *const u32),
            )
        };
        if vd_ndx == ndx {
            // Elf64_Verdaux: vda_name u32, vda_next u32. SAFETY: as above.
            let name = unsafe { *((p + vd_aux as usize) as *const u32) };
            // SAFETY: `vda_name` is a string-table offset.
            return Some(unsafe { str_at(d, name) });
        }
        if vd_next == 0 {
            return None;
        }
        p += vd_next as usize;
    }
}

/// The GNU hash of a symbol name.
fn gnu_hash(name: &[u8]) -> u32 {
    name.iter()
        .fold(5381u32, |h, &c| h.wrapping_mul(33).wrapping_add(c as u32))
}

/// Looks up `name` with version `ver` (or the default version) in `d`: its absolute address.
///
/// # Safety
/// `d` describes a loaded object.
unsafe fn lookup(d: &Dyn, name: &[u8], ver: Option<&[u8]>) -> Option<usize> {
    let h = d.gnu_hash as *const u32;
    // SAFETY (whole block): the GNU hash table layout: nbuckets, symoffset, bloom_size,
    // bloom_shift, bloom words (u64), buckets (u32), then the chain (u32), all mapped.
    unsafe {
        let (nbuckets, symoffset, bloom_size) = (*h, *h.add(1), *h.add(2));
        let buckets = h.add(4 + 2 * bloom_size as usize);
        let chain = buckets.add(nbuckets as usize);
        let hash = gnu_hash(name);
        let mut idx = *buckets.add((hash % nbuckets) as usize);
        if idx < symoffset {
            return None;
        }
        loop {
            let ch = *chain.add((idx - symoffset) as usize);
            if ch | 1 == hash | 1 {
                let sym = &*((d.symtab + idx as usize * core::mem::size_of::<Sym>()) as *const Sym);
                if sym.shndx != 0 && str_at(d, sym.name) == name {
                    let vs = *((d.versym + idx as usize * 2) as *const u16);
                    let hidden = vs & 0x8000 != 0;
                    let ok = match ver {
                        None => !hidden,
                        Some(v) => version_name(d, vs & 0x7fff) == Some(v),
                    };
                    if ok {
                        return Some(d.base + sym.value as usize);
                    }
                }
            }
            if ch & 1 != 0 {
                return None;
            }
            idx += 1;
        }
    }
}
