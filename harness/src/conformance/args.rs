//! Decoding of a step's `args` object (FORMAT.md §3) into smelt values.

use serde_json::Value;
use smelt_frontend::{
    DType, Dim, Error, MemoryFormat, Operand, Result, Scalar, Tensor, TensorIndex,
};
use std::collections::HashMap;

/// The tensors bound so far in a case.
pub type Env = HashMap<String, Tensor>;

/// A step's arguments with the environment they refer to.
pub struct Args<'a> {
    pub op: &'a str,
    pub map: &'a serde_json::Map<String, Value>,
    pub env: &'a Env,
}

fn bad(op: &str, key: &str, what: &str) -> Error {
    Error::value(format!("{op}: argument `{key}` {what}"))
}

/// A JSON number or special string as a scalar, keeping its kind (int vs float vs bool);
/// `{"complex": [re, im]}` is a Python complex.
pub fn scalar_of(v: &Value) -> Option<Scalar> {
    match v {
        Value::Object(o) => {
            let Some(Value::Array(parts)) = o.get("complex") else {
                return None;
            };
            let [re, im] = parts.as_slice() else {
                return None;
            };
            Some(Scalar::Complex(
                scalar_of(re)?.as_f64(),
                scalar_of(im)?.as_f64(),
            ))
        }
        Value::Bool(b) => Some(Scalar::Bool(*b)),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                if n.is_f64() {
                    Some(Scalar::Float(i as f64))
                } else {
                    Some(Scalar::Int(i))
                }
            } else {
                n.as_f64().map(Scalar::Float)
            }
        }
        Value::String(s) => match s.as_str() {
            "nan" => Some(Scalar::Float(f64::NAN)),
            "inf" => Some(Scalar::Float(f64::INFINITY)),
            "-inf" => Some(Scalar::Float(f64::NEG_INFINITY)),
            _ => None,
        },
        Value::Null | Value::Array(_) => None,
    }
}

/// A `tensor` data entry: a scalar, or a `[re, im]` pair (a complex element).
pub fn element_of(v: &Value) -> Option<Scalar> {
    match v {
        Value::Array(parts) => {
            let [re, im] = parts.as_slice() else {
                return None;
            };
            Some(Scalar::Complex(
                scalar_of(re)?.as_f64(),
                scalar_of(im)?.as_f64(),
            ))
        }
        _ => scalar_of(v),
    }
}

impl Args<'_> {
    pub fn has(&self, key: &str) -> bool {
        self.map.get(key).is_some_and(|v| !v.is_null())
    }

    fn get(&self, key: &str) -> Result<&Value> {
        self.map
            .get(key)
            .filter(|v| !v.is_null())
            .ok_or_else(|| bad(self.op, key, "is missing"))
    }

    pub fn tensor_ref(&self, v: &Value) -> Result<Tensor> {
        match v.as_str().and_then(|s| s.strip_prefix('$')) {
            Some(name) => self
                .env
                .get(name)
                .cloned()
                .ok_or_else(|| Error::value(format!("{}: unknown tensor `{name}`", self.op))),
            None => Err(Error::value(format!(
                "{}: expected a tensor reference, got {v}",
                self.op
            ))),
        }
    }

    pub fn tensor(&self, key: &str) -> Result<Tensor> {
        self.tensor_ref(self.get(key)?)
    }

    pub fn tensors(&self, key: &str) -> Result<Vec<Tensor>> {
        match self.get(key)? {
            Value::Array(items) => items.iter().map(|v| self.tensor_ref(v)).collect(),
            _ => Err(bad(self.op, key, "is not a list")),
        }
    }

    pub fn scalar(&self, key: &str) -> Result<Scalar> {
        scalar_of(self.get(key)?).ok_or_else(|| bad(self.op, key, "is not a scalar"))
    }

    /// A tensor reference or a scalar.
    pub fn operand(&self, key: &str) -> Result<Operand> {
        let v = self.get(key)?;
        if let Some(s) = scalar_of(v) {
            return Ok(Operand::Scalar(s));
        }
        Ok(Operand::Tensor(self.tensor_ref(v)?))
    }

    pub fn opt_operand(&self, key: &str) -> Result<Option<Operand>> {
        if self.has(key) {
            self.operand(key).map(Some)
        } else {
            Ok(None)
        }
    }

    pub fn int(&self, key: &str) -> Result<i64> {
        match self.get(key)? {
            Value::Number(n) if n.is_i64() => Ok(n.as_i64().unwrap_or(0)),
            Value::Bool(b) => Ok(*b as i64),
            _ => Err(bad(self.op, key, "is not an int")),
        }
    }

    pub fn int_or(&self, key: &str, default: i64) -> Result<i64> {
        if self.has(key) {
            self.int(key)
        } else {
            Ok(default)
        }
    }

    pub fn opt_int(&self, key: &str) -> Result<Option<i64>> {
        if self.has(key) {
            self.int(key).map(Some)
        } else {
            Ok(None)
        }
    }

    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(bad(self.op, key, "is not a bool")),
        }
    }

    /// A list of ints (a lone int is a list of one).
    pub fn ints(&self, key: &str) -> Result<Vec<i64>> {
        match self.get(key)? {
            Value::Array(items) => items
                .iter()
                .map(|v| {
                    v.as_i64()
                        .filter(|_| v.is_i64())
                        .ok_or_else(|| bad(self.op, key, "has a non-int entry"))
                })
                .collect(),
            Value::Number(n) if n.is_i64() => Ok(vec![n.as_i64().unwrap_or(0)]),
            _ => Err(bad(self.op, key, "is not a list of ints")),
        }
    }

    pub fn is_list(&self, key: &str) -> bool {
        matches!(self.map.get(key), Some(Value::Array(_)))
    }

    pub fn dtype(&self, key: &str) -> Result<Option<DType>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => DType::parse(s)
                .map(Some)
                .ok_or_else(|| bad(self.op, key, "is not a dtype")),
            Some(_) => Err(bad(self.op, key, "is not a dtype")),
        }
    }

    pub fn memory_format(&self, key: &str) -> Result<Option<MemoryFormat>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => MemoryFormat::parse(s)
                .map(Some)
                .ok_or_else(|| bad(self.op, key, "is not a memory format")),
            Some(_) => Err(bad(self.op, key, "is not a memory format")),
        }
    }

    pub fn string(&self, key: &str) -> Result<Option<String>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(bad(self.op, key, "is not a string")),
        }
    }

    /// A dim given by position (an int) or by name (a string, `named.jsonl`).
    pub fn dim(&self, key: &str) -> Result<Dim> {
        match self.get(key)? {
            Value::String(s) => Ok(Dim::Name(s.clone())),
            _ => self.int(key).map(Dim::Index),
        }
    }

    pub fn dim_or(&self, key: &str, default: i64) -> Result<Dim> {
        if self.has(key) {
            self.dim(key)
        } else {
            Ok(Dim::Index(default))
        }
    }

    /// A list of dims (all ints or all names).
    pub fn dims(&self, key: &str) -> Result<Vec<Dim>> {
        match self.get(key)? {
            Value::Array(items) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(Dim::Name(s.clone())),
                    Value::Number(n) if n.is_i64() => Ok(Dim::Index(n.as_i64().unwrap_or(0))),
                    _ => Err(bad(self.op, key, "has an entry that is not a dim")),
                })
                .collect(),
            _ => Err(bad(self.op, key, "is not a list of dims")),
        }
    }

    /// A list of dim names: a string (`"..."` is the Ellipsis) or null per entry.
    pub fn names(&self, key: &str) -> Result<Vec<Option<String>>> {
        match self.map.get(key) {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(Some(s.clone())),
                    Value::Null => Ok(None),
                    _ => Err(bad(self.op, key, "has an entry that is not a name")),
                })
                .collect(),
            _ => Err(bad(self.op, key, "is not a list of names")),
        }
    }

    /// `{old name: new name or null}` (rename by mapping).
    pub fn mapping(&self, key: &str) -> Result<Vec<(String, Option<String>)>> {
        match self.get(key)? {
            Value::Object(o) => o
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), Some(s.clone()))),
                    Value::Null => Ok((k.clone(), None)),
                    _ => Err(bad(self.op, key, "maps to something that is not a name")),
                })
                .collect(),
            _ => Err(bad(self.op, key, "is not an object")),
        }
    }

    /// The index items of getitem/setitem.
    pub fn index(&self, key: &str) -> Result<Vec<TensorIndex>> {
        let Value::Array(items) = self.get(key)? else {
            return Err(bad(self.op, key, "is not a list"));
        };
        items
            .iter()
            .map(|item| match item {
                Value::Number(n) if n.is_i64() => Ok(TensorIndex::Int(n.as_i64().unwrap_or(0))),
                Value::String(s) if s == "None" => Ok(TensorIndex::NewAxis),
                Value::String(s) if s == "..." => Ok(TensorIndex::Ellipsis),
                Value::String(s) if s.starts_with('$') => {
                    Ok(TensorIndex::Tensor(self.tensor_ref(item)?))
                }
                Value::Object(o) => match o.get("slice") {
                    Some(Value::Array(parts)) if parts.len() == 3 => {
                        let p = |i: usize| parts[i].as_i64();
                        Ok(TensorIndex::Slice(p(0), p(1), p(2)))
                    }
                    _ => Err(bad(self.op, key, "has a malformed slice")),
                },
                Value::Null
                | Value::Bool(_)
                | Value::Number(_)
                | Value::String(_)
                | Value::Array(_) => Err(bad(self.op, key, "has an unknown item")),
            })
            .collect()
    }
}
