//! The value types every part of the API shares: file types and entries.

use std::ffi::c_int;

use dcache::{FileType, Inode, InodeSpec};

/// The inode number of the root directory (FUSE's `FUSE_ROOT_ID`). Every cache starts with it.
pub const UDC_ROOT_INO: u64 = 1;

/// The type of a file, in `udc_entry.type`, `udc_dirent.type` and `udc_fill_add`.
#[repr(C)]
#[allow(clippy::upper_case_acronyms, dead_code)]
pub enum udc_type {
    /// Not known (only in directory listings; `udc_add` refuses it).
    UDC_TYPE_UNKNOWN = 0,
    /// A directory: has children, at most one name, and a parent (`..`).
    UDC_TYPE_DIR = 1,
    /// A regular file.
    UDC_TYPE_REG = 2,
    /// A symbolic link: `udc_walk` stops on it and reports it.
    UDC_TYPE_LNK = 3,
    /// Anything else: device, FIFO, socket.
    UDC_TYPE_OTHER = 4,
}

/// What a name resolves to: an inode number, its type, and a word of the filesystem's own.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct udc_entry {
    /// The inode number (FUSE node id); never 0.
    pub ino: u64,
    /// The file type (`enum udc_type`).
    pub r#type: u32,
    /// The filesystem's own word (an index, a handle, a pointer cast to `uint64_t`): kept with
    /// the inode, never interpreted.
    pub fs_data: u64,
}

/// The `enum udc_type` value of a cached file type.
pub(crate) fn type_code(kind: FileType) -> u32 {
    (match kind {
        FileType::Directory => udc_type::UDC_TYPE_DIR,
        FileType::Regular => udc_type::UDC_TYPE_REG,
        FileType::Symlink => udc_type::UDC_TYPE_LNK,
        FileType::Other => udc_type::UDC_TYPE_OTHER,
    }) as u32
}

/// The file type of an `enum udc_type` value; `UDC_TYPE_UNKNOWN` and unknown values are
/// `EINVAL` (a cached inode must have a type).
pub(crate) fn file_type(code: u32) -> Result<FileType, c_int> {
    const DIR: u32 = udc_type::UDC_TYPE_DIR as u32;
    const REG: u32 = udc_type::UDC_TYPE_REG as u32;
    const LNK: u32 = udc_type::UDC_TYPE_LNK as u32;
    const OTHER: u32 = udc_type::UDC_TYPE_OTHER as u32;
    match code {
        DIR => Ok(FileType::Directory),
        REG => Ok(FileType::Regular),
        LNK => Ok(FileType::Symlink),
        OTHER => Ok(FileType::Other),
        _ => Err(libc::EINVAL),
    }
}

impl udc_entry {
    /// The entry of an inode spec.
    pub(crate) fn of(spec: InodeSpec) -> Self {
        udc_entry { ino: spec.ino, r#type: type_code(spec.kind), fs_data: spec.fs_data }
    }

    /// The entry of a cached inode.
    pub(crate) fn of_inode(inode: &Inode) -> Self {
        Self::of(inode.spec())
    }

    /// The inode spec this entry describes: inode 0 or an unknown type is `EINVAL`.
    pub(crate) fn spec(&self) -> Result<InodeSpec, c_int> {
        if self.ino == 0 {
            return Err(libc::EINVAL);
        }
        Ok(InodeSpec { ino: self.ino, kind: file_type(self.r#type)?, fs_data: self.fs_data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_round_trip_and_unknown_is_refused() {
        for kind in [FileType::Directory, FileType::Regular, FileType::Symlink, FileType::Other] {
            assert_eq!(file_type(type_code(kind)), Ok(kind));
        }
        assert_eq!(file_type(0), Err(libc::EINVAL));
        assert_eq!(file_type(99), Err(libc::EINVAL));
        let e = udc_entry { ino: 0, r#type: 2, fs_data: 0 };
        assert_eq!(e.spec(), Err(libc::EINVAL));
    }
}
