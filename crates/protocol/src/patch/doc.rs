//! Documents held as JSON text together with where their top-level members are, and the
//! patches between several viewers' documents at once.
//!
//! A server holds each viewer's view as text and diffs it after every move. Diffing plain
//! text first has to find every top-level member of both texts by scanning them; a [`Doc`]
//! written by [`Doc::of`] records those places while it is written, and keeps them for the
//! next diff, so only the members that changed are ever scanned. And the viewers of one
//! table see mostly the same things (the trick, the cards played, the scores): where a
//! member changed alike for an earlier viewer of the same call, [`diff_docs_at`] copies that
//! viewer's operations instead of diffing it again.

use std::borrow::Cow;
use std::ops::Range;

use serde::Serialize;
use serde::ser::{self, Impossible};

use super::{Op, RawPatchOp, diff_text, members, or_replace, push_token};

/// JSON text, and where its top-level members are when it is an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Doc {
    /// Boxed, as the members are: no spare capacity is held for as long as the document
    /// is (a table holds one per viewer, connected or not).
    text: Box<str>,
    /// Each top-level member's key (inside its quotes) and value, as places in `text`, in
    /// order; `None` when the text is not an object, or a key is written with escapes.
    members: Option<Box<[Member]>>,
}

/// Where a member's key (inside its quotes) and value are: byte offsets, start and end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Member {
    key: (u32, u32),
    value: (u32, u32),
}

impl Member {
    fn new(key: Range<usize>, value: Range<usize>) -> Member {
        let at = |r: Range<usize>| {
            (
                u32::try_from(r.start).expect("a document under 4 GiB"),
                u32::try_from(r.end).expect("a document under 4 GiB"),
            )
        };
        Member {
            key: at(key),
            value: at(value),
        }
    }
}

fn part(text: &str, (start, end): (u32, u32)) -> &str {
    &text[start as usize..end as usize]
}

impl Doc {
    /// `value` written by serde_json (the very text `serde_json::to_string` makes), its
    /// members' places recorded as they are written when it is a struct; anything else is
    /// written whole and scanned once.
    pub fn of<T: Serialize + ?Sized>(value: &T) -> Doc {
        let mut buf = Vec::with_capacity(512);
        let mut spans = Vec::with_capacity(32);
        let mut plain = true;
        let top = TopLevel {
            buf: &mut buf,
            spans: &mut spans,
            plain: &mut plain,
        };
        match value.serialize(top) {
            Ok(()) => Doc {
                text: String::from_utf8(buf)
                    .expect("serde_json writes UTF-8")
                    .into_boxed_str(),
                members: plain.then(|| spans.into_boxed_slice()),
            },
            Err(_) => Doc::scanned(serde_json::to_string(value).expect("serializes to JSON")),
        }
    }

    /// `text` must be valid JSON without surrounding whitespace.
    fn scanned(text: String) -> Doc {
        let members = text
            .starts_with('{')
            .then(|| members(&text))
            .flatten()
            .map(|ms| {
                let at = |s: &str| {
                    let start = s.as_ptr() as usize - text.as_ptr() as usize;
                    start..start + s.len()
                };
                ms.iter().map(|(k, v)| Member::new(at(k), at(v))).collect()
            });
        Doc {
            text: text.into_boxed_str(),
            members,
        }
    }

    /// The JSON text.
    pub fn text(&self) -> &str {
        &self.text
    }

    fn key(&self, i: usize) -> &str {
        let m = self.members.as_ref().expect("an object's members");
        part(&self.text, m[i].key)
    }

    fn value(&self, i: usize) -> &str {
        let m = self.members.as_ref().expect("an object's members");
        part(&self.text, m[i].value)
    }

    /// Whether both are objects with the same keys in the same order.
    fn aligned(&self, other: &Doc) -> bool {
        match (&self.members, &other.members) {
            (Some(a), Some(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|(a, b)| part(&self.text, a.key) == part(&other.text, b.key))
            }
            _ => false,
        }
    }
}

/// For each pair `(old, new)` of `pairs`, appends to the same place of `ops` the patch that
/// turns `old`, found at `path` of a larger document, into `new`: the very patch
/// [`super::diff_raw_text_at`] makes from the same texts. A top-level member that changed
/// from the same text to the same text as in an earlier pair is not diffed again: that
/// pair's operations for it are copied.
pub fn diff_docs_at(path: &str, pairs: &[(&Doc, &Doc)], ops: &mut [Vec<RawPatchOp>]) {
    assert_eq!(pairs.len(), ops.len(), "one list of operations per pair");
    let mut made: Vec<Vec<Op<Cow<'_, str>>>> = Vec::with_capacity(pairs.len());
    // Per pair, per member: where its operations are in `made` (none when the pair was
    // diffed whole, or its members' operations were replaced by the whole document's).
    let mut places: Vec<Vec<Option<Range<usize>>>> = Vec::with_capacity(pairs.len());
    let mut at = path.to_string();
    for (i, &(old, new)) in pairs.iter().enumerate() {
        let mut mine = Vec::new();
        let mut spots = Vec::new();
        if old.text == new.text {
            // Nothing to do.
        } else if !old.aligned(new) {
            diff_text(&old.text, &new.text, &mut at, &mut mine);
        } else {
            spots = vec![None; old.members.as_ref().map_or(0, |m| m.len())];
            for (m, spot) in spots.iter_mut().enumerate() {
                let (va, vb) = (old.value(m), new.value(m));
                if va == vb {
                    continue;
                }
                let start = mine.len();
                let earlier = (0..i).find_map(|j| {
                    let (oj, nj) = pairs[j];
                    let range = places[j].get(m)?.clone()?;
                    (oj.key(m) == old.key(m) && oj.value(m) == va && nj.value(m) == vb)
                        .then_some((j, range))
                });
                match earlier {
                    Some((j, range)) => mine.extend_from_slice(&made[j][range]),
                    None => {
                        push_token(&mut at, old.key(m));
                        diff_text(va, vb, &mut at, &mut mine);
                        at.truncate(path.len());
                    }
                }
                *spot = Some(start..mine.len());
            }
            // As `diff_text` does for every container: the whole of it when shorter.
            if or_replace(&mut mine, 0, path, new.text.len(), || {
                Cow::Borrowed(&*new.text)
            }) {
                spots.clear();
            }
        }
        made.push(mine);
        places.push(spots);
    }
    for (out, mine) in ops.iter_mut().zip(made) {
        out.extend(mine.into_iter().map(RawPatchOp::from));
    }
}

/// The name under which serde_json's `RawValue` serializes itself (serde_json 1.x).
const RAW_VALUE: &str = "$serde_json::private::RawValue";

/// The top level of a [`Doc::of`]: a struct's members are written one by one, their places
/// recorded; anything else is refused (and then written whole).
struct TopLevel<'a> {
    buf: &'a mut Vec<u8>,
    spans: &'a mut Vec<Member>,
    /// False once a key needed escapes.
    plain: &'a mut bool,
}

/// What [`TopLevel`] refuses: anything but a struct.
#[derive(Debug)]
struct NotAStruct;

impl std::fmt::Display for NotAStruct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not a struct")
    }
}

impl std::error::Error for NotAStruct {}

impl ser::Error for NotAStruct {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        NotAStruct
    }
}

struct Members<'a>(TopLevel<'a>);

impl ser::SerializeStruct for Members<'_> {
    type Ok = ();
    type Error = NotAStruct;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), NotAStruct> {
        let top = &mut self.0;
        if !top.spans.is_empty() {
            top.buf.push(b',');
        }
        let k = top.buf.len();
        serde_json::to_writer(&mut *top.buf, key).map_err(|_| NotAStruct)?;
        let key_at = k + 1..top.buf.len() - 1;
        if &top.buf[key_at.clone()] != key.as_bytes() {
            *top.plain = false;
        }
        top.buf.push(b':');
        let v = top.buf.len();
        serde_json::to_writer(&mut *top.buf, value).map_err(|_| NotAStruct)?;
        top.spans.push(Member::new(key_at, v..top.buf.len()));
        Ok(())
    }

    fn end(self) -> Result<(), NotAStruct> {
        self.0.buf.push(b'}');
        Ok(())
    }
}

macro_rules! refuse {
    ($($name:ident($($arg:ty),*);)*) => {
        $(fn $name(self, $(_: $arg),*) -> Result<(), NotAStruct> {
            Err(NotAStruct)
        })*
    };
}

impl<'a> ser::Serializer for TopLevel<'a> {
    type Ok = ();
    type Error = NotAStruct;
    type SerializeSeq = Impossible<(), NotAStruct>;
    type SerializeTuple = Impossible<(), NotAStruct>;
    type SerializeTupleStruct = Impossible<(), NotAStruct>;
    type SerializeTupleVariant = Impossible<(), NotAStruct>;
    type SerializeMap = Impossible<(), NotAStruct>;
    type SerializeStruct = Members<'a>;
    type SerializeStructVariant = Impossible<(), NotAStruct>;

    refuse! {
        serialize_bool(bool);
        serialize_i8(i8);
        serialize_i16(i16);
        serialize_i32(i32);
        serialize_i64(i64);
        serialize_u8(u8);
        serialize_u16(u16);
        serialize_u32(u32);
        serialize_u64(u64);
        serialize_f32(f32);
        serialize_f64(f64);
        serialize_char(char);
        serialize_str(&str);
        serialize_bytes(&[u8]);
        serialize_none();
        serialize_unit();
        serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }

    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<(), NotAStruct> {
        Err(NotAStruct)
    }

    /// A transparent wrapper is written as what it wraps.
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), NotAStruct> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), NotAStruct> {
        Err(NotAStruct)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NotAStruct> {
        Err(NotAStruct)
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NotAStruct> {
        Err(NotAStruct)
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, NotAStruct> {
        Err(NotAStruct)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotAStruct> {
        Err(NotAStruct)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotAStruct> {
        Err(NotAStruct)
    }

    fn serialize_struct(
        self,
        name: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, NotAStruct> {
        // A `RawValue` (or what serializes as one, as cards do) is serde_json's private
        // struct of one member, its text: written whole, as it is.
        if name == RAW_VALUE {
            return Err(NotAStruct);
        }
        self.buf.push(b'{');
        Ok(Members(self))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotAStruct> {
        Err(NotAStruct)
    }
}

#[cfg(test)]
mod tests {
    use super::super::diff_raw_text_at;
    use super::*;
    use proptest::prelude::*;
    use serde_json::value::RawValue;
    use serde_json::{Value, json};

    #[derive(Serialize)]
    struct View {
        hand: Vec<u8>,
        #[serde(skip_serializing_if = "Option::is_none")]
        trick: Option<Vec<u8>>,
        #[serde(rename = "we/ird\"key")]
        weird: u8,
    }

    #[derive(Serialize)]
    struct Plain {
        a: Value,
        b: Value,
        c: Value,
    }

    fn plain(a: Value, b: Value, c: Value) -> Doc {
        Doc::of(&Plain { a, b, c })
    }

    /// What `Doc::of` writes is what serde_json writes, whatever the value; a struct's
    /// members are found where they are.
    #[test]
    fn a_doc_is_serde_jsons_text() {
        for v in [
            json!([1, 2]),
            json!({"k": [1, {"x": null}]}),
            json!("s"),
            json!(null),
        ] {
            assert_eq!(&*Doc::of(&v).text, serde_json::to_string(&v).unwrap());
        }
        let view = View {
            hand: vec![3, 4],
            trick: None,
            weird: 1,
        };
        let d = Doc::of(&view);
        assert_eq!(&*d.text, serde_json::to_string(&view).unwrap());
        // An escaped key: the places are not used.
        assert_eq!(d.members, None);
        let d = plain(json!([1]), json!({"x": "}"}), json!(null));
        assert_eq!(&*d.text, r#"{"a":[1],"b":{"x":"}"},"c":null}"#);
        assert_eq!(
            (0..3).map(|i| (d.key(i), d.value(i))).collect::<Vec<_>>(),
            [("a", "[1]"), ("b", r#"{"x":"}"}"#), ("c", "null")]
        );
        // Raw text (cards are written so) is written as it is, its members scanned.
        let raw_object = serde_json::value::to_raw_value(&json!({"k": [1]})).unwrap();
        let r = Doc::of(&raw_object);
        assert_eq!(&*r.text, r#"{"k":[1]}"#);
        assert_eq!(r.key(0), "k");
        // Found by scanning (a map is written whole), the same places.
        assert_eq!(Doc::of(&json!({"a": [1], "b": {"x": "}"}, "c": null})), d);
    }

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            (0i64..3).prop_map(Value::from),
            prop::collection::vec((0i64..3).prop_map(Value::from), 0..4).prop_map(Value::Array),
            prop::sample::select(vec!["a", "}\"", "/"]).prop_map(Value::from),
        ]
    }

    proptest! {
        /// Several viewers diffed at once make, each, the patch of diffing it alone,
        /// including where the viewers share members' changes (values drawn from few
        /// choices, so that they often do) and where the whole document is replaced.
        #[test]
        fn diffed_together_each_patch_is_its_own(
            docs in prop::collection::vec(
                ((leaf(), leaf(), leaf()), (leaf(), leaf(), leaf())),
                1..5,
            ),
        ) {
            let pairs: Vec<(Doc, Doc)> = docs
                .into_iter()
                .map(|((a, b, c), (d, e, f))| (plain(a, b, c), plain(d, e, f)))
                .collect();
            let refs: Vec<(&Doc, &Doc)> = pairs.iter().map(|(o, n)| (o, n)).collect();
            let mut together = vec![Vec::new(); pairs.len()];
            diff_docs_at("/view", &refs, &mut together);
            for ((old, new), got) in pairs.iter().zip(&together) {
                let raw = |d: &Doc| RawValue::from_string(d.text.to_string()).unwrap();
                let mut alone = Vec::new();
                diff_raw_text_at("/view", &raw(old), &raw(new), &mut alone);
                prop_assert_eq!(got, &alone);
            }
        }
    }

    /// A member that changed alike for two viewers is diffed once and copied: the copy is
    /// the same operations (what the property test checks), and a member that changed
    /// differently is diffed for each. The copy is told from a second diff by counting
    /// the texts compared.
    #[test]
    fn a_shared_change_is_copied() {
        // Long enough that patching beats replacing the whole.
        let rest = json!("the rest of the view, which no move changes, and is long");
        let o1 = plain(json!([1, 2, 3]), json!("mine"), rest.clone());
        let n1 = plain(json!([1, 3]), json!("mine"), rest.clone());
        let o2 = plain(json!([1, 2, 3]), json!("yours"), rest.clone());
        let n2 = plain(json!([1, 3]), json!("yours!"), rest);
        let diffs = || super::super::TEXT_DIFFS.with(|n| n.get());
        let mut ops = vec![Vec::new(), Vec::new()];
        let before = diffs();
        diff_docs_at("/view", &[(&o1, &n1), (&o2, &n2)], &mut ops);
        // `a` once, `b` for the second viewer only; alone, each viewer diffs its `a`.
        assert_eq!(diffs() - before, 2, "the second viewer's `a` is copied");
        let mut alone = vec![Vec::new()];
        let before = diffs();
        diff_docs_at("/view", &[(&o2, &n2)], &mut alone);
        assert_eq!(diffs() - before, 2, "diffed alone: `a` and `b`");
        assert_eq!(alone[0], ops[1]);
        let remove = RawPatchOp::Remove {
            path: "/view/a/1".into(),
        };
        assert_eq!(ops[0], std::slice::from_ref(&remove));
        assert_eq!(
            ops[1],
            [
                remove,
                RawPatchOp::Replace {
                    path: "/view/b".into(),
                    value: "\"yours!\"".into()
                }
            ]
        );
    }
}
