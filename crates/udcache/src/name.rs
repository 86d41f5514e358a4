//! Name validation: what a directory entry's name may be.

use crate::error::{Error, InvalidName};

/// The longest name, in bytes (POSIX `NAME_MAX` on Linux).
pub const NAME_MAX: usize = 255;

/// Checks that `name` can be a directory entry's name: not empty, not `.` or `..`, no `/`,
/// no NUL, at most [`NAME_MAX`] bytes.
///
/// ```
/// use udcache::{Error, InvalidName, validate_name};
/// assert!(validate_name(b"file.c").is_ok());
/// assert_eq!(validate_name(b"a/b"), Err(Error::InvalidName(InvalidName::Slash)));
/// assert_eq!(validate_name(b".."), Err(Error::InvalidName(InvalidName::Dot)));
/// ```
pub fn validate_name(name: &[u8]) -> Result<(), Error> {
    let why = match name {
        [] => InvalidName::Empty,
        b"." | b".." => InvalidName::Dot,
        n if n.len() > NAME_MAX => InvalidName::TooLong(n.len()),
        n if n.contains(&b'/') => InvalidName::Slash,
        n if n.contains(&0) => InvalidName::Nul,
        _ => return Ok(()),
    };
    Err(Error::InvalidName(why))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bad_name_is_refused_with_its_reason() {
        let bad = |n: &[u8]| match validate_name(n) {
            Err(Error::InvalidName(w)) => w,
            other => panic!("{n:?}: {other:?}"),
        };
        assert_eq!(bad(b""), InvalidName::Empty);
        assert_eq!(bad(b"."), InvalidName::Dot);
        assert_eq!(bad(b".."), InvalidName::Dot);
        assert_eq!(bad(b"a/"), InvalidName::Slash);
        assert_eq!(bad(b"a\0b"), InvalidName::Nul);
        assert_eq!(bad(&[b'x'; 256]), InvalidName::TooLong(256));
        assert!(validate_name(&[b'x'; 255]).is_ok());
        assert!(validate_name(b"...").is_ok());
    }
}
