//! The value model: what Go's `reflect` sees of template data.
//!
//! Go templates are evaluated by reflection, so what a template prints and which errors it raises depend
//! on Go types: a struct prints `{a b}`, a field lookup on the wrong type names the type, a function whose
//! parameter is `map[string]interface {}` refuses a `map[string]string`. [`Type`] and [`Value`] carry
//! exactly the type information those rules need, and nothing else (no pointers, channels or arbitrary
//! functions: Flux's data has none).

use std::cell::RefCell;
use std::cmp::Ordering;
use std::fmt;
use std::rc::Rc;

/// A Go type, as far as templates can observe it.
#[derive(Clone, Debug)]
pub enum Type {
    /// `bool`
    Bool,
    /// `int`
    Int,
    /// `int64`
    Int64,
    /// `int32` (runes)
    Int32,
    /// `uint8` (bytes)
    Uint8,
    /// `float64`
    Float64,
    /// `complex128`
    Complex128,
    /// `string`
    String,
    /// `interface {}`
    Any,
    /// `error` (only as the dynamic type of nothing; kept for type names)
    Error,
    /// `[]T`
    Slice(Rc<Type>),
    /// `map[K]V`
    Map(Rc<Type>, Rc<Type>),
    /// A named type (`update.Result`, `types.NamespacedName`...).
    Named(Rc<NamedType>),
}

/// The reflect kind of a type, with Go's spelling (`reflect.Kind.String()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// no value
    Invalid,
    /// bool
    Bool,
    /// int
    Int,
    /// int64
    Int64,
    /// int32
    Int32,
    /// uint8
    Uint8,
    /// float64
    Float64,
    /// complex128
    Complex128,
    /// string
    String,
    /// interface
    Interface,
    /// slice
    Slice,
    /// map
    Map,
    /// struct
    Struct,
}

impl Kind {
    /// Go's name of the kind.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Invalid => "invalid",
            Kind::Bool => "bool",
            Kind::Int => "int",
            Kind::Int64 => "int64",
            Kind::Int32 => "int32",
            Kind::Uint8 => "uint8",
            Kind::Float64 => "float64",
            Kind::Complex128 => "complex128",
            Kind::String => "string",
            Kind::Interface => "interface",
            Kind::Slice => "slice",
            Kind::Map => "map",
            Kind::Struct => "struct",
        }
    }
}

/// What a named type is underneath.
#[derive(Debug)]
pub enum Underlying {
    /// A struct with its fields in declaration order.
    Struct(Vec<FieldDef>),
    /// A named map type (`update.ObjectChanges`).
    Map(Type, Type),
    /// A named interface type (`update.ImageRef`): only its name shows (in `%T`, `%#v` and error
    /// messages); values of it are held by their dynamic type.
    Interface,
}

/// A struct field.
#[derive(Debug)]
pub struct FieldDef {
    /// Field name (for an embedded field, the type's unqualified name).
    pub name: String,
    /// Field type.
    pub ty: Type,
    /// Whether the field is embedded (its fields are promoted).
    pub embedded: bool,
    /// `encoding/json` name from the field's tag, if the tag names one.
    pub json_name: Option<String>,
    /// `omitempty` in the field's `json` tag.
    pub json_omitempty: bool,
}

impl FieldDef {
    /// Whether the field is exported (its name starts with an upper-case letter, Go's rule).
    pub fn exported(&self) -> bool {
        self.name.chars().next().is_some_and(char::is_uppercase)
    }

    /// An embedded field of the named type `ty` (named after the type, without its package).
    pub fn embedded(ty: &Rc<NamedType>) -> FieldDef {
        FieldDef {
            name: ty.name.rsplit('.').next().unwrap_or(&ty.name).to_owned(),
            ty: Type::Named(ty.clone()),
            embedded: true,
            json_name: None,
            json_omitempty: false,
        }
    }

    /// A plain field without a json tag (exported when its name starts with an upper-case letter).
    pub fn new(name: &str, ty: Type) -> FieldDef {
        FieldDef {
            name: name.to_owned(),
            ty,
            embedded: false,
            json_name: None,
            json_omitempty: false,
        }
    }
}

/// A method with a value receiver, called with the receiver and its arguments (already checked
/// against the method's parameter types).
pub type MethodFn = fn(&Value, &[Value]) -> Value;

/// An exported method of a named type, callable from templates as `.Name` (with arguments when it
/// takes some).
#[derive(Debug)]
pub struct Method {
    /// The method's name.
    pub name: String,
    /// Parameter types; for a variadic method the last one is the element type of `...T`.
    pub params: Vec<Type>,
    /// Whether the last parameter is variadic.
    pub variadic: bool,
    /// The result type (the first result; a second `error` result is never non-nil here).
    pub result: Type,
    /// The method's body.
    pub call: MethodFn,
}

impl Method {
    /// A method without parameters.
    pub fn niladic(name: &str, result: Type, call: MethodFn) -> Method {
        Method {
            name: name.to_owned(),
            params: Vec::new(),
            variadic: false,
            result,
            call,
        }
    }

    /// A method with parameters.
    pub fn with_params(
        name: &str,
        params: Vec<Type>,
        variadic: bool,
        result: Type,
        call: MethodFn,
    ) -> Method {
        Method {
            name: name.to_owned(),
            params,
            variadic,
            result,
            call,
        }
    }
}

/// Indexes into nested struct fields, outermost first.
pub type FieldPath = Box<[usize]>;

/// A Go named type.
#[derive(Debug)]
pub struct NamedType {
    /// Qualified name as `reflect.Type.String()` prints it, e.g. `update.Result`.
    pub name: String,
    /// Struct fields or map key/element types.
    pub underlying: Underlying,
    /// Exported value-receiver methods (the method set templates see, promoted methods included).
    pub methods: Vec<Method>,
    /// A `String() string` method (the type is a `fmt.Stringer`).
    pub stringer: Option<fn(&Value) -> String>,
    /// The paths of the promoted fields looked up so far (`None`: no such
    /// field): a template looks the same few names up once per object.
    pub promoted: RefCell<Vec<(Box<str>, Option<FieldPath>)>>,
}

impl NamedType {
    /// A named type without methods.
    pub fn new(name: &str, underlying: Underlying) -> NamedType {
        NamedType {
            name: name.to_owned(),
            underlying,
            methods: Vec::new(),
            stringer: None,
            promoted: RefCell::default(),
        }
    }
}

impl Type {
    /// `[]T`
    pub fn slice_of(elem: Type) -> Type {
        Type::Slice(Rc::new(elem))
    }

    /// `map[K]V`
    pub fn map_of(key: Type, elem: Type) -> Type {
        Type::Map(Rc::new(key), Rc::new(elem))
    }

    /// The reflect kind.
    pub fn kind(&self) -> Kind {
        match self {
            Type::Bool => Kind::Bool,
            Type::Int => Kind::Int,
            Type::Int64 => Kind::Int64,
            Type::Int32 => Kind::Int32,
            Type::Uint8 => Kind::Uint8,
            Type::Float64 => Kind::Float64,
            Type::Complex128 => Kind::Complex128,
            Type::String => Kind::String,
            Type::Any | Type::Error => Kind::Interface,
            Type::Slice(_) => Kind::Slice,
            Type::Map(..) => Kind::Map,
            Type::Named(n) => match n.underlying {
                Underlying::Struct(_) => Kind::Struct,
                Underlying::Map(..) => Kind::Map,
                Underlying::Interface => Kind::Interface,
            },
        }
    }

    /// Whether a value of this type can be nil (Go's `canBeNil`).
    pub fn can_be_nil(&self) -> bool {
        matches!(self.kind(), Kind::Interface | Kind::Map | Kind::Slice)
    }

    /// Go type identity.
    pub fn same(&self, other: &Type) -> bool {
        match (self, other) {
            (Type::Slice(a), Type::Slice(b)) => a.same(b),
            (Type::Map(ak, av), Type::Map(bk, bv)) => ak.same(bk) && av.same(bv),
            (Type::Named(a), Type::Named(b)) => Rc::ptr_eq(a, b) || a.name == b.name,
            (Type::Any, Type::Any) | (Type::Error, Type::Error) => true,
            (a, b) => {
                !matches!(
                    a,
                    Type::Named(_) | Type::Slice(_) | Type::Map(..) | Type::Any | Type::Error
                ) && a.kind() == b.kind()
            }
        }
    }

    /// Go assignability of a value of type `self` to a variable of type `to`.
    pub fn assignable_to(&self, to: &Type) -> bool {
        if matches!(to, Type::Any) {
            return true;
        }
        if self.same(to) {
            return true;
        }
        // Identical underlying types and one of them unnamed.
        match (self, to) {
            (Type::Named(n), Type::Map(k, v)) | (Type::Map(k, v), Type::Named(n)) => {
                matches!(&n.underlying, Underlying::Map(nk, nv) if nk.same(k) && nv.same(v))
            }
            _ => false,
        }
    }

    /// Key and element types of a map type.
    pub fn map_types(&self) -> Option<(&Type, &Type)> {
        match self {
            Type::Map(k, v) => Some((k, v)),
            Type::Named(n) => match &n.underlying {
                Underlying::Map(k, v) => Some((k, v)),
                Underlying::Struct(_) | Underlying::Interface => None,
            },
            _ => None,
        }
    }

    /// The named type, if any.
    pub fn named(&self) -> Option<&Rc<NamedType>> {
        match self {
            Type::Named(n) => Some(n),
            _ => None,
        }
    }

    /// The zero value of the type.
    pub fn zero(&self) -> Value {
        match self {
            Type::Bool => Value::Bool(false),
            Type::Int | Type::Int64 | Type::Int32 | Type::Uint8 => Value::Int(0, self.clone()),
            Type::Float64 => Value::Float(0.0),
            Type::Complex128 => Value::Complex(0.0, 0.0),
            Type::String => Value::str(""),
            Type::Any | Type::Error | Type::Slice(_) | Type::Map(..) => Value::Nil(self.clone()),
            Type::Named(n) => match &n.underlying {
                Underlying::Map(..) | Underlying::Interface => Value::Nil(self.clone()),
                Underlying::Struct(fields) => Value::Struct(Rc::new(StructVal {
                    ty: n.clone(),
                    fields: fields.iter().map(|f| f.ty.zero()).collect(),
                    hidden: Vec::new(),
                })),
            },
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Bool => f.write_str("bool"),
            Type::Int => f.write_str("int"),
            Type::Int64 => f.write_str("int64"),
            Type::Int32 => f.write_str("int32"),
            Type::Uint8 => f.write_str("uint8"),
            Type::Float64 => f.write_str("float64"),
            Type::Complex128 => f.write_str("complex128"),
            Type::String => f.write_str("string"),
            Type::Any => f.write_str("interface {}"),
            Type::Error => f.write_str("error"),
            Type::Slice(e) => write!(f, "[]{e}"),
            Type::Map(k, v) => write!(f, "map[{k}]{v}"),
            Type::Named(n) => f.write_str(&n.name),
        }
    }
}

/// A slice value.
#[derive(Debug)]
pub struct SliceVal {
    /// The slice type (`[]T`).
    pub ty: Type,
    /// The elements.
    pub items: Vec<Value>,
}

/// A map value. Go maps are references: Sprig's `set` and `unset` change them in place, which is why
/// the entries sit in a `RefCell`. Entries are kept in Go's `fmtsort` key order.
#[derive(Debug)]
pub struct MapVal {
    /// The map type.
    pub ty: Type,
    /// Entries sorted by key.
    pub entries: RefCell<Vec<(Value, Value)>>,
}

/// A struct value.
#[derive(Debug)]
pub struct StructVal {
    /// The struct's named type.
    pub ty: Rc<NamedType>,
    /// Field values in declaration order.
    pub fields: Vec<Value>,
    /// Values the type's methods return, computed when the value was built.
    pub hidden: Vec<Value>,
}

/// A template value: a Go value with its dynamic type.
#[derive(Clone, Debug)]
pub enum Value {
    /// No value at all (`reflect.Value{}`): a missing map key, an untyped nil.
    Invalid,
    /// A nil of a type that can be nil: a nil interface, a nil slice, a nil map.
    Nil(Type),
    /// A bool.
    Bool(bool),
    /// An integer of type `int`, `int64`, `int32` or `uint8`.
    Int(i64, Type),
    /// A float64.
    Float(f64),
    /// A complex128.
    Complex(f64, f64),
    /// A string.
    Str(Rc<str>),
    /// A non-nil slice.
    Slice(Rc<SliceVal>),
    /// A non-nil map.
    Map(Rc<MapVal>),
    /// A struct.
    Struct(Rc<StructVal>),
}

impl Value {
    /// A string value.
    pub fn str(s: &str) -> Value {
        Value::Str(Rc::from(s))
    }

    /// A string value from an owned string.
    pub fn string(s: String) -> Value {
        Value::Str(Rc::from(s))
    }

    /// An `int`.
    pub fn int(i: i64) -> Value {
        Value::Int(i, Type::Int)
    }

    /// An `int64`.
    pub fn int64(i: i64) -> Value {
        Value::Int(i, Type::Int64)
    }

    /// A slice of the given slice type.
    pub fn slice(ty: Type, items: Vec<Value>) -> Value {
        Value::Slice(Rc::new(SliceVal { ty, items }))
    }

    /// A `[]interface {}`.
    pub fn list(items: Vec<Value>) -> Value {
        Value::slice(Type::slice_of(Type::Any), items)
    }

    /// A `[]string`.
    pub fn strings(items: Vec<String>) -> Value {
        Value::slice(
            Type::slice_of(Type::String),
            items.into_iter().map(Value::string).collect(),
        )
    }

    /// A map of the given map type; entries are sorted here.
    pub fn map(ty: Type, mut entries: Vec<(Value, Value)>) -> Value {
        entries.sort_by(|a, b| compare_keys(&a.0, &b.0));
        entries.dedup_by(|b, a| compare_keys(&a.0, &b.0) == Ordering::Equal);
        Value::Map(Rc::new(MapVal {
            ty,
            entries: RefCell::new(entries),
        }))
    }

    /// A map whose entries are already in key order with no key twice
    /// (built from a `BTreeMap` whose order is Go's key order): no sort.
    pub(crate) fn map_sorted(ty: Type, entries: Vec<(Value, Value)>) -> Value {
        debug_assert!(
            entries
                .windows(2)
                .all(|w| compare_keys(&w[0].0, &w[1].0) == Ordering::Less)
        );
        Value::Map(Rc::new(MapVal {
            ty,
            entries: RefCell::new(entries),
        }))
    }

    /// A struct of a named struct type.
    pub fn structure(ty: &Rc<NamedType>, fields: Vec<Value>, hidden: Vec<Value>) -> Value {
        Value::Struct(Rc::new(StructVal {
            ty: ty.clone(),
            fields,
            hidden,
        }))
    }

    /// The `i`th field of a struct ([`Value::Invalid`] for anything else).
    pub fn field(&self, i: usize) -> Value {
        match self {
            Value::Struct(s) => s.fields.get(i).cloned().unwrap_or(Value::Invalid),
            _ => Value::Invalid,
        }
    }

    /// The `i`th value a struct's methods return ([`Value::Invalid`] for anything else).
    pub fn hidden(&self, i: usize) -> Value {
        match self {
            Value::Struct(s) => s.hidden.get(i).cloned().unwrap_or(Value::Invalid),
            _ => Value::Invalid,
        }
    }

    /// The dynamic type; `None` for [`Value::Invalid`].
    pub fn ty(&self) -> Option<Type> {
        Some(match self {
            Value::Invalid => return None,
            Value::Nil(t) => t.clone(),
            Value::Bool(_) => Type::Bool,
            Value::Int(_, t) => t.clone(),
            Value::Float(_) => Type::Float64,
            Value::Complex(..) => Type::Complex128,
            Value::Str(_) => Type::String,
            Value::Slice(s) => s.ty.clone(),
            Value::Map(m) => m.ty.clone(),
            Value::Struct(s) => Type::Named(s.ty.clone()),
        })
    }

    /// The reflect kind.
    pub fn kind(&self) -> Kind {
        match self {
            Value::Invalid => Kind::Invalid,
            Value::Nil(t) => t.kind(),
            Value::Bool(_) => Kind::Bool,
            Value::Int(_, t) => t.kind(),
            Value::Float(_) => Kind::Float64,
            Value::Complex(..) => Kind::Complex128,
            Value::Str(_) => Kind::String,
            Value::Slice(_) => Kind::Slice,
            Value::Map(_) => Kind::Map,
            Value::Struct(_) => Kind::Struct,
        }
    }

    /// Type name for messages (`<nil>` for no value).
    pub fn type_name(&self) -> String {
        match self.ty() {
            Some(t) => t.to_string(),
            None => "<nil>".to_owned(),
        }
    }

    /// A nil interface becomes no value (what `reflect.ValueOf(v.Interface())` does).
    pub fn unwrap_nil_interface(self) -> Value {
        match self {
            Value::Nil(Type::Any) => Value::Invalid,
            v => v,
        }
    }

    /// Whether this is a nil of any nilable type, or no value.
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Invalid | Value::Nil(_))
    }

    /// Go's `len` of a string (bytes), slice or map.
    pub fn go_len(&self) -> Option<usize> {
        match self {
            Value::Str(s) => Some(s.len()),
            Value::Slice(s) => Some(s.items.len()),
            Value::Map(m) => Some(m.entries.borrow().len()),
            Value::Nil(t) if matches!(t.kind(), Kind::Slice | Kind::Map) => Some(0),
            _ => None,
        }
    }

    /// Go's template truth (`isTrue`); `None` when the value has no truth (never for our kinds).
    pub fn truth(&self) -> bool {
        match self {
            Value::Invalid | Value::Nil(_) => false,
            Value::Bool(b) => *b,
            Value::Int(i, _) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Complex(r, i) => *r != 0.0 || *i != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Slice(s) => !s.items.is_empty(),
            Value::Map(m) => !m.entries.borrow().is_empty(),
            Value::Struct(_) => true,
        }
    }

    /// The string, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Slice elements (empty for a nil slice).
    pub fn slice_items(&self) -> Option<&[Value]> {
        match self {
            Value::Slice(s) => Some(&s.items),
            Value::Nil(t) if t.kind() == Kind::Slice => Some(&[]),
            _ => None,
        }
    }

    /// Look a map entry up.
    pub fn map_get(&self, key: &Value) -> Option<Value> {
        match self {
            Value::Map(m) => {
                let entries = m.entries.borrow();
                entries
                    .binary_search_by(|(k, _)| compare_keys(k, key))
                    .ok()
                    .and_then(|i| entries.get(i).map(|e| e.1.clone()))
            }
            _ => None,
        }
    }

    /// Map entries in key order (empty for a nil map).
    pub fn map_entries(&self) -> Vec<(Value, Value)> {
        match self {
            Value::Map(m) => m.entries.borrow().clone(),
            _ => Vec::new(),
        }
    }

    /// Go's `reflect.DeepEqual` for the values templates build. As in Go, a slice or map is equal
    /// to itself, and a pair of slices or maps met again is taken as equal (Go's `visited`), so
    /// values that share their parts compare in time linear in their distinct parts, not in
    /// their (maybe exponentially many) paths. Values nested deeper than 100 levels compare
    /// unequal.
    pub fn deep_equal(&self, other: &Value) -> bool {
        self.deep_equal_at(other, 0, &mut std::collections::HashSet::new())
    }

    fn deep_equal_at(
        &self,
        other: &Value,
        depth: usize,
        seen: &mut std::collections::HashSet<(usize, usize)>,
    ) -> bool {
        if depth > 100 {
            return false;
        }
        let d = depth + 1;
        // Go's DeepEqual: the same slice (of the same length) or map is equal; a pair already
        // being compared is assumed equal.
        let visited = |seen: &mut std::collections::HashSet<(usize, usize)>, a: usize, b: usize| {
            a == b || !seen.insert((a, b))
        };
        match (self, other) {
            (Value::Invalid, Value::Invalid) => true,
            (Value::Nil(a), Value::Nil(b)) => a.same(b),
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a, ta), Value::Int(b, tb)) => a == b && ta.same(tb),
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::Complex(a, b), Value::Complex(c, d)) => a == c && b == d,
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::Slice(a), Value::Slice(b)) => {
                a.ty.same(&b.ty)
                    && a.items.len() == b.items.len()
                    && (visited(seen, Rc::as_ptr(a) as usize, Rc::as_ptr(b) as usize)
                        || a.items
                            .iter()
                            .zip(&b.items)
                            .all(|(x, y)| x.deep_equal_at(y, d, seen)))
            }
            (Value::Map(a), Value::Map(b)) => {
                if !a.ty.same(&b.ty) {
                    return false;
                }
                let (ea, eb) = (a.entries.borrow(), b.entries.borrow());
                ea.len() == eb.len()
                    && (visited(seen, Rc::as_ptr(a) as usize, Rc::as_ptr(b) as usize)
                        || ea.iter().zip(eb.iter()).all(|(x, y)| {
                            x.0.deep_equal_at(&y.0, d, seen) && x.1.deep_equal_at(&y.1, d, seen)
                        }))
            }
            (Value::Struct(a), Value::Struct(b)) => {
                a.ty.name == b.ty.name
                    && a.fields.len() == b.fields.len()
                    && a.fields
                        .iter()
                        .zip(&b.fields)
                        .all(|(x, y)| x.deep_equal_at(y, d, seen))
            }
            _ => false,
        }
    }
}

/// Go's `internal/fmtsort` order of map keys: numbers by value, strings by bytes, false before true,
/// structs field by field, nil before anything.
pub fn compare_keys(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Int(x, _), Value::Int(y, _)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => x
            .partial_cmp(y)
            .unwrap_or_else(|| x.is_nan().cmp(&y.is_nan()).reverse()),
        (Value::Str(x), Value::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Struct(x), Value::Struct(y)) => {
            for (fx, fy) in x.fields.iter().zip(&y.fields) {
                let c = compare_keys(fx, fy);
                if c != Ordering::Equal {
                    return c;
                }
            }
            Ordering::Equal
        }
        (Value::Invalid | Value::Nil(_), Value::Invalid | Value::Nil(_)) => Ordering::Equal,
        (Value::Invalid | Value::Nil(_), _) => Ordering::Less,
        (_, Value::Invalid | Value::Nil(_)) => Ordering::Greater,
        _ => kind_rank(a).cmp(&kind_rank(b)),
    }
}

fn kind_rank(v: &Value) -> u8 {
    match v {
        Value::Invalid | Value::Nil(_) => 0,
        Value::Bool(_) => 1,
        Value::Int(..) => 2,
        Value::Float(_) => 3,
        Value::Complex(..) => 4,
        Value::Str(_) => 5,
        Value::Struct(_) => 6,
        Value::Slice(_) => 7,
        Value::Map(_) => 8,
    }
}

/// Where a field named `name` sits in a struct type, following embedded structs breadth first as Go's
/// `FieldByName` does (the shallowest match wins; two at the same depth hide each other).
pub fn field_path(ty: &NamedType, name: &str) -> Option<Vec<usize>> {
    let Underlying::Struct(fields) = &ty.underlying else {
        return None;
    };
    // Field names are unique at the top level, so a direct field needs no search.
    if let Some(i) = fields.iter().position(|f| f.name == name) {
        return Some(vec![i]);
    }
    let mut level: Vec<(Vec<usize>, &[FieldDef])> = vec![(Vec::new(), fields.as_slice())];
    for _depth in 0..16 {
        let mut found: Option<Vec<usize>> = None;
        let mut count = 0;
        let mut next = Vec::new();
        for (path, fields) in &level {
            for (i, f) in fields.iter().enumerate() {
                let mut p = path.clone();
                p.push(i);
                if f.name == name {
                    count += 1;
                    found = Some(p.clone());
                }
                if f.embedded
                    && let Type::Named(n) = &f.ty
                    && let Underlying::Struct(sub) = &n.underlying
                {
                    next.push((p, sub.as_slice()));
                }
            }
        }
        if count == 1 {
            return found;
        }
        if count > 1 || next.is_empty() {
            return None;
        }
        level = next;
    }
    None
}

/// The value of the field `name` of a struct (promoted fields included), if it has one.
pub fn lookup_field(v: &StructVal, name: &str) -> Option<Value> {
    if let Underlying::Struct(fields) = &v.ty.underlying
        && let Some(i) = fields.iter().position(|f| f.name == name)
    {
        return v.fields.get(i).cloned();
    }
    if let Some((_, path)) = v.ty.promoted.borrow().iter().find(|(n, _)| &**n == name) {
        return path.as_deref().and_then(|p| field_at(v, p));
    }
    let path = field_path(&v.ty, name).map(Vec::into_boxed_slice);
    let found = path.as_deref().and_then(|p| field_at(v, p));
    v.ty.promoted.borrow_mut().push((name.into(), path));
    found
}

/// [`lookup_field`], with whether the field found is exported (promoted fields count by their own
/// name).
pub fn lookup_field_exported(v: &StructVal, name: &str) -> Option<(Value, bool)> {
    let exported = name.chars().next().is_some_and(char::is_uppercase);
    lookup_field(v, name).map(|f| (f, exported))
}

/// Follow a field path through nested structs.
pub fn field_at(v: &StructVal, path: &[usize]) -> Option<Value> {
    let (first, rest) = path.split_first()?;
    let f = v.fields.get(*first)?;
    if rest.is_empty() {
        return Some(f.clone());
    }
    match f {
        Value::Struct(s) => field_at(s, rest),
        _ => None,
    }
}
