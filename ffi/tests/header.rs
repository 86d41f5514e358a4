//! The committed header `include/udcache.h` is what cbindgen generates from the source today,
//! its declarations grouped by topic.
//!
//! cbindgen writes every constant, then every type (in the order their uses need), then every
//! function. [`group_by_topic`] rearranges that output into [`TOPICS`]: each group opens with
//! a kernel-doc `DOC:` comment and holds its constants, types and functions, in the order
//! listed there. Each type must come before its first use (`make -C c-tests test` compiles the
//! header with `-Werror`). A declaration that no topic lists, or a listed one that cbindgen
//! does not generate, fails this test: a new item of the C ABI is given its place here.
//!
//! `UDCACHE_BLESS=1 cargo test -p udcache-ffi --release --test header` rewrites the header
//! instead of failing.

use std::collections::HashMap;
use std::path::Path;

/// A group of the header: its heading, the paragraph under it (one line per entry, wrapped by
/// hand), and its declarations by name, in order.
struct Topic {
    heading: &'static str,
    text: &'static [&'static str],
    items: &'static [&'static str],
}

/// The header's groups, in order.
const TOPICS: &[Topic] = &[
    Topic {
        heading: "Handles and configuration",
        text: &[
            "A cache is made by udc_cache_new from a udc_config (udc_config_init, then the fields",
            "to change) and freed by udc_cache_destroy. It starts with the root directory,",
            "UDC_ROOT_INO, cached; udc_set_ops (under \"The filesystem's callbacks\") gives it",
            "the filesystem behind it.",
        ],
        items: &[
            "udc_version",
            "udc_cache",
            "UDC_ROOT_INO",
            "udc_unlink_policy",
            "udc_config",
            "udc_config_init",
            "udc_cache_new",
            "udc_cache_destroy",
        ],
    },
    Topic {
        heading: "Lookups, walks and attributes",
        text: &[
            "Answers from what is cached: one name (udc_lookup, udc_peek), a path (udc_walk),",
            "a directory's positive children (udc_children), an inode's attributes",
            "(udc_getattr). None of them calls a callback but udc_resolve, which asks the",
            "lookup callback on a miss and files its answer.",
        ],
        items: &[
            "UDC_MISS",
            "UDC_POSITIVE",
            "UDC_NEGATIVE",
            "udc_type",
            "udc_entry",
            "udc_lookup",
            "udc_peek",
            "udc_lookup_fn",
            "udc_resolve",
            "UDC_WALK_MISS",
            "UDC_WALK_FOUND",
            "UDC_WALK_NEGATIVE",
            "UDC_WALK_SYMLINK",
            "UDC_WALK_NOTDIR",
            "UDC_WALK_DENIED",
            "udc_walk_result",
            "udc_walk",
            "udc_child_fn",
            "udc_children",
            "udc_attr",
            "udc_getattr",
        ],
    },
    Topic {
        heading: "Changes",
        text: &[
            "What the filesystem did, told to the cache: a name added (positive or negative),",
            "unlinked, renamed or invalidated; attributes set; lookup counts counted and",
            "forgotten (FUSE's forget); and entries evicted on demand (udc_shrink).",
        ],
        items: &[
            "udc_add",
            "udc_add_negative",
            "udc_unlink",
            "UDC_RENAME_NOREPLACE",
            "UDC_RENAME_EXCHANGE",
            "udc_rename",
            "udc_invalidate",
            "udc_setattr",
            "udc_count_lookup",
            "udc_forget",
            "udc_shrink",
        ],
    },
    Topic {
        heading: "Readdir",
        text: &[
            "Listings cached per directory and indexed by cookie: udc_readdir answers from the",
            "cache, or asks the readdir callback for a page, which it fills with udc_fill_add",
            "and udc_fill_done; udc_dir_changed tells the cache that a directory changed.",
        ],
        items: &[
            "udc_dirent",
            "udc_readdir",
            "udc_fill",
            "udc_readdir_fn",
            "udc_fill_add",
            "udc_fill_done",
            "udc_dir_changed",
        ],
    },
    Topic {
        heading: "Revalidation and access",
        text: &[
            "How long a cached name is trusted (udc_config's timeouts, udc_set_entry_timeout),",
            "the revalidate callback asked once it is not, udc_walk_as (a walk that revalidates",
            "and checks search rights), and the access cache: udc_access through the access",
            "callback, udc_cached_access, udc_access_stamp and udc_store_access for a",
            "filesystem that computes rights itself, udc_acl_changed.",
        ],
        items: &[
            "UDC_TTL_FOREVER",
            "UDC_TTL_CONFIGURED",
            "udc_set_entry_timeout",
            "UDC_REVAL_INVALID",
            "UDC_REVAL_VALID",
            "UDC_REVAL_NEEDS_BLOCK",
            "udc_cached",
            "udc_revalidate_fn",
            "UDC_MAY_EXEC",
            "UDC_MAY_WRITE",
            "UDC_MAY_READ",
            "udc_cred",
            "udc_walk_as",
            "udc_access_fn",
            "udc_access",
            "UDC_ACCESS_ALLOWED",
            "UDC_ACCESS_DENIED",
            "udc_cached_access",
            "udc_access_stamp",
            "udc_store_access",
            "udc_acl_changed",
        ],
    },
    Topic {
        heading: "The filesystem's callbacks",
        text: &[
            "The callbacks of the groups above and their context, given to a cache once, before",
            "the handle is shared. When each runs and what it may do: CALLBACKS above.",
        ],
        items: &["udc_ops", "udc_set_ops"],
    },
    Topic {
        heading: "Statistics",
        text: &[
            "A cache's counters, as a struct (udc_stats_get) or as text that starts like",
            "/proc/sys/fs/dentry-state (udc_stats_format).",
        ],
        items: &["udc_stats", "udc_stats_get", "udc_stats_format"],
    },
];

/// Where cbindgen's declarations start: after the includes.
const INCLUDES_END: &str = "#include <stdint.h>\n";
const EXTERN_C_OPEN: &str = "#ifdef __cplusplus\nextern \"C\" {\n#endif // __cplusplus\n";
const EXTERN_C_CLOSE: &str = "#ifdef __cplusplus\n}  // extern \"C\"\n#endif  // __cplusplus\n";

/// The name an item of cbindgen's output declares: a `#define`, a typedef'd enum, struct or
/// function pointer, or a function.
fn declared_name(item: &str) -> &str {
    let decl = item
        .lines()
        .find(|l| !l.trim_start().starts_with(['/', '*']))
        .unwrap_or_else(|| panic!("no declaration in {item:?}"));
    let name = if let Some(rest) = decl.strip_prefix("#define ") {
        rest.split(' ').next()
    } else if let Some(rest) =
        decl.strip_prefix("typedef enum ").or_else(|| decl.strip_prefix("typedef struct "))
    {
        rest.split([' ', ';']).next()
    } else if let Some((_, rest)) = decl.split_once("(*") {
        rest.split(')').next()
    } else {
        decl.split('(').next().and_then(|d| d.rsplit([' ', '*']).next())
    };
    name.filter(|n| !n.is_empty()).unwrap_or_else(|| panic!("no name in {decl:?}"))
}

/// cbindgen's header with its declarations rearranged into [`TOPICS`], all of them inside the
/// `extern "C"` block, each group under a `DOC:` comment.
fn group_by_topic(generated: &str) -> String {
    let split = |text: &'static str, s: &str| -> (String, String) {
        let (a, b) = s.split_once(text).unwrap_or_else(|| panic!("{text:?} not generated"));
        (a.to_owned(), b.to_owned())
    };
    let (head, rest) = split(INCLUDES_END, generated);
    let (types, rest) = split(EXTERN_C_OPEN, &rest);
    let (functions, tail) = split(EXTERN_C_CLOSE, &rest);
    let mut items = HashMap::new();
    for item in types.split("\n\n").chain(functions.split("\n\n")) {
        let item = item.trim_matches('\n');
        if !item.is_empty() {
            let name = declared_name(item);
            assert!(items.insert(name, item).is_none(), "{name} declared twice");
        }
    }
    let mut out = format!("{head}{INCLUDES_END}\n{EXTERN_C_OPEN}");
    for topic in TOPICS {
        out += &format!("\n/**\n * DOC: {}\n *\n", topic.heading);
        for line in topic.text {
            out += &format!(" * {line}\n");
        }
        out += " */\n";
        for name in topic.items {
            let item = items.remove(name).unwrap_or_else(|| panic!("{name} is not generated"));
            out += &format!("\n{item}\n");
        }
    }
    let mut left: Vec<_> = items.into_keys().collect();
    left.sort_unstable();
    assert!(left.is_empty(), "in no topic of TOPICS (tests/header.rs): {left:?}");
    out + "\n" + EXTERN_C_CLOSE + &tail
}

#[test]
fn committed_header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let generated = group_by_topic(&String::from_utf8(generated).expect("UTF-8"));
    let path = dir.join("include/udcache.h");
    if std::env::var_os("UDCACHE_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write include/udcache.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/udcache.h is stale; to regenerate it, run\n\
         UDCACHE_BLESS=1 cargo test -p udcache-ffi --release --test header\n\
         --- generated ---\n{generated}"
    );
}
