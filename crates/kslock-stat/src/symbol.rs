//! Symbolization: a dumped address → its mapping (from the dump's `/proc/<pid>/maps`) →
//! the object file's own address (through its ELF load segments) → function, file and line
//! (DWARF, with inlined frames) or the symbol table (`addr2line`'s loader).

use crate::raw::Map;
use addr2line::Loader;
use object::{Object, ObjectSegment, ObjectSymbol};
use std::collections::HashMap;

/// One symbolized frame (inlined frames are frames of their own).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Frame {
    /// The return address (or, for a lock, its address).
    pub addr: String,
    /// The function, demangled; `??` if unknown.
    pub function: String,
    /// `file:line`, if the debug info has it.
    pub location: Option<String>,
    /// The object file.
    pub object: String,
}

struct Obj {
    loader: Option<Loader>,
    /// The lowest and highest (end) virtual address of the load segments.
    lo: u64,
    hi: u64,
    /// Symbols with a size (static and dynamic tables): (address, size, name), by address.
    symbols: Vec<(u64, u64, String)>,
}

fn load(path: &str) -> Obj {
    let mut o = Obj {
        loader: Loader::new(path).ok(),
        lo: 0,
        hi: 0,
        symbols: Vec::new(),
    };
    let Ok(data) = std::fs::read(path) else {
        return o;
    };
    let Ok(f) = object::File::parse(&*data) else {
        return o;
    };
    let segs: Vec<(u64, u64)> = f.segments().map(|s| (s.address(), s.size())).collect();
    o.lo = segs.iter().map(|s| s.0).min().unwrap_or(0);
    o.hi = segs.iter().map(|s| s.0 + s.1).max().unwrap_or(0);
    for sym in f.symbols().chain(f.dynamic_symbols()) {
        if sym.size() > 0 && sym.is_definition() {
            if let Ok(n) = sym.name() {
                o.symbols.push((sym.address(), sym.size(), n.to_string()));
            }
        }
    }
    o.symbols.sort();
    o.symbols.dedup_by_key(|s| s.0);
    o
}

impl Obj {
    /// The symbol whose [address, address + size) holds `svma`.
    fn symbol(&self, svma: u64) -> Option<&str> {
        let i = self
            .symbols
            .partition_point(|s| s.0 <= svma)
            .checked_sub(1)?;
        let (a, size, name) = &self.symbols[i];
        (svma < a + size).then_some(name.as_str())
    }
}

/// Symbolizes addresses of one dumped process.
pub struct Symbolizer<'a> {
    maps: &'a [Map],
    objects: HashMap<String, Obj>,
    /// Load bias of each object file: its mapping at file offset 0 minus its lowest
    /// segment's page.
    bias: HashMap<String, u64>,
}

impl<'a> Symbolizer<'a> {
    pub fn new(maps: &'a [Map]) -> Self {
        let mut bias = HashMap::new();
        for m in maps {
            if m.offset == 0 && m.path.starts_with('/') {
                bias.entry(m.path.clone()).or_insert(m.start);
            }
        }
        Symbolizer {
            maps,
            objects: HashMap::new(),
            bias,
        }
    }

    /// The mapping holding `addr`.
    pub fn map_of(&self, addr: u64) -> Option<&'a Map> {
        self.maps.iter().find(|m| m.start <= addr && addr < m.end)
    }

    fn object(&mut self, path: &str) -> &Obj {
        self.objects
            .entry(path.to_string())
            .or_insert_with(|| load(path))
    }

    /// `addr` as an address of its object file, and that file's path: the file mapped
    /// there, or (zero-filled `.bss` past the file's pages) the file whose segments span it.
    fn svma(&mut self, addr: u64) -> Option<(u64, String)> {
        let mapped = self
            .map_of(addr)
            .filter(|m| m.path.starts_with('/'))
            .map(|m| m.path.clone());
        let candidates: Vec<String> = match mapped {
            Some(p) => vec![p],
            None => self.bias.keys().cloned().collect(),
        };
        for path in candidates {
            let start = *self.bias.get(&path)?;
            let obj = self.object(&path);
            let base = start.checked_sub(obj.lo & !0xfff)?;
            let svma = addr.checked_sub(base)?;
            if obj.lo <= svma && svma < obj.hi {
                return Some((svma, path));
            }
        }
        None
    }

    /// Whether `addr` lies in an object whose path ends with `suffix`.
    pub fn in_object(&self, addr: u64, suffix: &str) -> bool {
        self.map_of(addr).is_some_and(|m| m.path.ends_with(suffix))
    }

    /// The frames (innermost first, inlined ones included) of return address `ret`.
    pub fn frames(&mut self, ret: u64) -> Vec<Frame> {
        let addr = format!("{ret:#x}");
        let object = self
            .map_of(ret)
            .map(|m| short(&m.path).to_string())
            .unwrap_or_else(|| "?".into());
        let unknown = |object: String| Frame {
            addr: addr.clone(),
            function: "??".into(),
            location: None,
            object,
        };
        // A return address points after its call: look the call up.
        let Some((probe, path)) = self.svma(ret.saturating_sub(1)) else {
            return vec![unknown(object)];
        };
        let Some(loader) = self.object(&path).loader.as_ref() else {
            return vec![unknown(object)];
        };
        let mut out = Vec::new();
        if let Ok(mut it) = loader.find_frames(probe) {
            while let Ok(Some(f)) = it.next() {
                let function = f
                    .function
                    .as_ref()
                    .and_then(|n| n.demangle().ok().map(|s| s.into_owned()));
                let location = f
                    .location
                    .as_ref()
                    .and_then(|l| Some(format!("{}:{}", short(l.file?), l.line.unwrap_or(0))));
                out.push(Frame {
                    addr: addr.clone(),
                    function: function.unwrap_or_else(|| "??".into()),
                    location,
                    object: object.clone(),
                });
            }
        }
        if out.is_empty() || out.iter().all(|f| f.function == "??") {
            let sym = self
                .object(&path)
                .symbol(probe)
                .map(|s| addr2line::demangle_auto(s.into(), None).into_owned());
            return vec![Frame {
                function: sym.unwrap_or_else(|| "??".into()),
                ..unknown(object)
            }];
        }
        out
    }

    /// The symbol a lock at `addr` lies in (a global or static), with its object's name.
    pub fn data_symbol(&mut self, addr: u64) -> Option<String> {
        let (probe, path) = self.svma(addr)?;
        let s = self.object(&path).symbol(probe)?;
        Some(addr2line::demangle_auto(s.into(), None).into_owned())
    }

    /// Where a lock at `addr` lives when it has no symbol: `heap`, `stack`, or the mapping.
    pub fn region(&self, addr: u64) -> String {
        match self.map_of(addr) {
            Some(m) if m.path == "[heap]" => "heap".into(),
            Some(m) if m.path.starts_with("[stack") => "stack".into(),
            Some(m) if m.path.is_empty() => "anonymous memory (heap or thread stack)".into(),
            Some(m) => short(&m.path).into(),
            None => "unmapped".into(),
        }
    }
}

/// The last path component of `p`.
pub fn short(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}
