//! Arguments from C: names, paths, in and out pointers, and versioned structs.
//!
//! Each helper checks what can be checked (NULL, lengths, the `size` field) and returns
//! `Err(errno)` before anything is read or written, so a refused call changes nothing. A
//! caller's length is bounded ([`check_len`]) before a slice is built from it.

use std::ffi::{c_char, c_int};
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::time::Duration;

use dcache::NAME_MAX;

/// A name `(ptr, len)` from C: not NUL-terminated. `NULL` or `len == 0` is `EINVAL`, more than
/// 255 bytes is `ENAMETOOLONG` (checked before the bytes are read), and
/// [`dcache::validate_name`] refuses `/`, NUL, `.` and `..` (`EINVAL`).
///
/// # Safety
///
/// If `ptr` is not NULL and `len <= 255`, `ptr` must point to `len` readable bytes that stay
/// unchanged for `'a`.
pub(crate) unsafe fn name<'a>(ptr: *const c_char, len: usize) -> Result<&'a [u8], c_int> {
    if ptr.is_null() || len == 0 {
        return Err(libc::EINVAL);
    }
    if len > NAME_MAX {
        return Err(libc::ENAMETOOLONG);
    }
    // SAFETY: not NULL, and the caller guarantees `len` readable bytes at `ptr` for 'a.
    let name = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    dcache::validate_name(name).map_err(crate::errors::fail)?;
    Ok(name)
}

/// Checks a caller's length of `len` `T`s before a slice is built from it: more than
/// `isize::MAX` bytes (`PTRDIFF_MAX`) is `EINVAL`. No object is that large, and a slice that
/// long would be undefined behaviour, whatever the caller claims.
fn check_len<T>(len: usize) -> Result<(), c_int> {
    match len.checked_mul(size_of::<T>()) {
        Some(bytes) if bytes <= isize::MAX as usize => Ok(()),
        _ => Err(libc::EINVAL),
    }
}

/// A path `(ptr, len)` from C (components are checked by the walk). `NULL` is allowed only with
/// `len == 0` (the empty path); `len` over `isize::MAX` is `EINVAL` ([`check_len`]).
///
/// # Safety
///
/// If `ptr` is not NULL and `len <= isize::MAX`, it must point to `len` readable bytes that
/// stay unchanged for `'a`.
pub(crate) unsafe fn path<'a>(ptr: *const c_char, len: usize) -> Result<&'a [u8], c_int> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(libc::EINVAL);
    }
    check_len::<u8>(len)?;
    // SAFETY: not NULL, `len` bounded, and the caller guarantees `len` readable bytes at `ptr`
    // for 'a.
    Ok(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
}

/// A time to live in nanoseconds from C: `UINT64_MAX` is forever (`Duration::MAX`).
pub(crate) fn ttl(ns: u64) -> Duration {
    if ns == u64::MAX { Duration::MAX } else { Duration::from_nanos(ns) }
}

/// A struct the caller passes in: `NULL` is `EINVAL`.
///
/// # Safety
///
/// If not NULL, `ptr` must point to a valid, aligned `T` that nothing writes during `'a`.
pub(crate) unsafe fn input<'a, T>(ptr: *const T) -> Result<&'a T, c_int> {
    // SAFETY: the caller guarantees a valid `T` if not NULL; `as_ref` checks NULL.
    unsafe { ptr.as_ref() }.ok_or(libc::EINVAL)
}

/// A struct the library fills: written, never read (the caller's memory may be
/// uninitialised), except the `size` field of a [`Versioned`] struct.
pub(crate) struct Out<'a, T>(NonNull<T>, PhantomData<&'a mut T>);

/// The caller's struct to fill: `NULL` is `EINVAL`.
///
/// # Safety
///
/// If not NULL, `ptr` must point to writable, aligned memory for a `T` that nothing else
/// accesses during `'a`.
pub(crate) unsafe fn output<'a, T>(ptr: *mut T) -> Result<Out<'a, T>, c_int> {
    NonNull::new(ptr).map(|p| Out(p, PhantomData)).ok_or(libc::EINVAL)
}

impl<T> Out<'_, T> {
    /// Writes the result.
    pub(crate) fn write(self, value: T) {
        // SAFETY: writable, aligned and exclusive for 'a (the contract of `output`); a write
        // does not read or drop the old contents.
        unsafe { self.0.as_ptr().write(value) }
    }
}

impl<T: Versioned> Out<'_, T> {
    /// Checks the `size` field the caller set, as [`check_size`] does.
    pub(crate) fn check_size(&self) -> Result<(), c_int> {
        // SAFETY: `size: usize` is the first field of `T` (asserted by `versioned!`) and the
        // caller set it before the call (the documented contract of every versioned out
        // struct); the memory is readable for 'a (the contract of `output`).
        let size = unsafe { self.0.as_ptr().cast::<usize>().read() };
        if size < size_of::<T>() { Err(libc::EINVAL) } else { Ok(()) }
    }
}

/// A caller's buffer of `len` bytes to write: `NULL` or `len` over `isize::MAX` is `EINVAL`
/// ([`check_len`]).
///
/// # Safety
///
/// If not NULL and `len <= isize::MAX`, `ptr` must point to `len` writable bytes that nothing
/// else accesses during `'a`.
pub(crate) unsafe fn bytes_out<'a>(
    ptr: *mut c_char,
    len: usize,
) -> Result<&'a mut [MaybeUninit<u8>], c_int> {
    if ptr.is_null() {
        return Err(libc::EINVAL);
    }
    check_len::<u8>(len)?;
    // SAFETY: not NULL, `len` bounded, and the caller guarantees `len` writable bytes,
    // exclusively, for 'a; `MaybeUninit` makes no claim about their contents.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr.cast::<MaybeUninit<u8>>(), len) })
}

/// A caller's array of `len` `T`s to fill: `NULL` is `EINVAL` (unless `len` is 0), and so is
/// a `len` of more than `isize::MAX` bytes ([`check_len`]).
///
/// # Safety
///
/// If not NULL and `len` `T`s are at most `isize::MAX` bytes, `ptr` must point to `len`
/// writable, aligned `T`s that nothing else accesses during `'a`.
pub(crate) unsafe fn array_out<'a, T>(
    ptr: *mut T,
    len: usize,
) -> Result<&'a mut [MaybeUninit<T>], c_int> {
    if len == 0 {
        return Ok(&mut []);
    }
    if ptr.is_null() {
        return Err(libc::EINVAL);
    }
    check_len::<T>(len)?;
    // SAFETY: not NULL, `len` bounded, and the caller guarantees `len` writable, aligned `T`s,
    // exclusively, for 'a; `MaybeUninit` makes no claim about their contents.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr.cast(), len) })
}

/// A struct versioned by its first field, `size` (`= sizeof` the caller's version of it).
pub(crate) trait Versioned {
    /// The `size` field.
    fn size(&self) -> usize;
}

/// Checks a versioned struct's `size`: at least this library's `sizeof(T)` (a caller built
/// against an older, smaller version is refused with `EINVAL`; larger, from a newer header, is
/// accepted and its extra fields are ignored).
pub(crate) fn check_size<T: Versioned>(v: &T) -> Result<(), c_int> {
    if v.size() < size_of::<T>() { Err(libc::EINVAL) } else { Ok(()) }
}

/// Implements [`Versioned`] for structs whose first field is `size: usize` (asserted).
macro_rules! versioned {
    ($($t:ty),*) => {$(
        const _: () = assert!(std::mem::offset_of!($t, size) == 0);
        impl $crate::args::Versioned for $t {
            fn size(&self) -> usize {
                self.size
            }
        }
    )*};
}
pub(crate) use versioned;

#[cfg(test)]
mod tests {
    use super::*;

    fn check(n: &[u8]) -> Result<&[u8], c_int> {
        // SAFETY: `n` is a live slice of `n.len()` bytes.
        unsafe { name(n.as_ptr().cast(), n.len()) }
    }

    #[test]
    fn bad_names_have_their_errno() {
        assert_eq!(check(b"ok"), Ok(&b"ok"[..]));
        assert_eq!(check(b""), Err(libc::EINVAL));
        assert_eq!(check(b"a/b"), Err(libc::EINVAL));
        assert_eq!(check(b"a\0b"), Err(libc::EINVAL));
        assert_eq!(check(b".."), Err(libc::EINVAL));
        assert_eq!(check(&[b'x'; 256]), Err(libc::ENAMETOOLONG));
        assert!(check(&[b'x'; 255]).is_ok());
        // SAFETY: NULL is checked before anything is read.
        assert_eq!(unsafe { name(std::ptr::null(), 3) }, Err(libc::EINVAL));
        // SAFETY: as above; a too-long length is refused before reading.
        assert_eq!(unsafe { name(b"x".as_ptr().cast(), 1 << 40) }, Err(libc::ENAMETOOLONG));
    }

    #[test]
    fn lengths_over_isize_max_bytes_are_einval() {
        const MAX: usize = isize::MAX as usize;
        assert_eq!(check_len::<u8>(MAX), Ok(()));
        assert_eq!(check_len::<u8>(MAX + 1), Err(libc::EINVAL));
        assert_eq!(check_len::<u8>(usize::MAX), Err(libc::EINVAL));
        assert_eq!(check_len::<u64>(MAX / 8), Ok(()));
        assert_eq!(check_len::<u64>(MAX / 8 + 1), Err(libc::EINVAL));
        assert_eq!(check_len::<u64>(usize::MAX / 4), Err(libc::EINVAL)); // the product overflows
        assert_eq!(check_len::<()>(usize::MAX), Ok(())); // zero-sized: no bytes

        let mut bytes = [0u8; 4];
        let text: *const c_char = bytes.as_ptr().cast();
        // SAFETY: the lengths are refused before anything is read.
        unsafe {
            assert_eq!(path(text, MAX + 1), Err(libc::EINVAL));
            assert_eq!(path(text, usize::MAX), Err(libc::EINVAL));
        }
        // SAFETY: `bytes` holds 4 readable bytes.
        assert_eq!(unsafe { path(text, 4) }, Ok(&[0u8; 4][..]));
        // SAFETY: the lengths are refused before a slice is made.
        unsafe {
            assert_eq!(bytes_out(bytes.as_mut_ptr().cast(), MAX + 1).err(), Some(libc::EINVAL));
            assert_eq!(bytes_out(bytes.as_mut_ptr().cast(), usize::MAX).err(), Some(libc::EINVAL));
        }
        // SAFETY: `bytes` holds 4 writable bytes, used by nothing else meanwhile.
        assert_eq!(unsafe { bytes_out(bytes.as_mut_ptr().cast(), 4) }.map(|b| b.len()), Ok(4));

        let mut words = [0u64; 2];
        let w = words.as_mut_ptr();
        // SAFETY: the lengths are refused before a slice is made.
        unsafe {
            assert_eq!(array_out(w, MAX / 8 + 1).err(), Some(libc::EINVAL));
            assert_eq!(array_out(w, usize::MAX).err(), Some(libc::EINVAL));
            assert_eq!(
                array_out(std::ptr::null_mut::<u64>(), usize::MAX).err(),
                Some(libc::EINVAL)
            );
        }
        // SAFETY: `words` holds 2 writable, aligned u64s, used by nothing else meanwhile.
        assert_eq!(unsafe { array_out(w, 2) }.map(|a| a.len()), Ok(2));
    }
}
