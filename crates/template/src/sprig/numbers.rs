//! Conversions and numbers: `toString`, `atoi`, `int64`, arithmetic, `until`, `seq`, JSON.

use std::collections::HashMap;

use super::{
    Res, a, arg_int, arg_str, go_split, i, map_ss, msg, s, seq, strings_of, strslice, to_float64,
    to_int64, unsupported, until_step,
};
use crate::funcs::FuncDef;
use crate::funcs::{CallCtx, Param, def, t};
use crate::gofmt;
use crate::value::{Type, Value};

/// Registers this family's functions.
pub(super) fn register(f: &mut HashMap<&'static str, FuncDef>) {
    let mut add =
        |name: &'static str, params: Vec<Param>, variadic: bool, imp: crate::funcs::Impl| {
            f.insert(name, def(params, variadic, imp));
        };
    add("atoi", vec![s()], false, |_, a| {
        let st = arg_str(&a[0]);
        let digits = st.strip_prefix(['+', '-']).unwrap_or(st);
        let ok = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
        Ok(Value::int(if ok {
            st.parse::<i64>().unwrap_or(0)
        } else {
            0
        }))
    });
    add("int64", vec![a()], false, |_, a| {
        Ok(Value::int64(to_int64(&a[0])))
    });
    add("int", vec![a()], false, |_, a| {
        Ok(Value::int(to_int64(&a[0])))
    });
    add("float64", vec![a()], false, |_, a| {
        Ok(Value::Float(to_float64(&a[0])))
    });
    add("toDecimal", vec![a()], false, |_, a| {
        let text = gofmt::sprint_value(&a[0]);
        let digits = text.strip_prefix(['+', '-']).unwrap_or(&text);
        let v = if !digits.is_empty() && digits.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
            i64::from_str_radix(&text, 8).unwrap_or(0)
        } else {
            0
        };
        Ok(Value::int64(v))
    });
    add("seq", vec![i()], true, |c, a| {
        let p: Vec<i64> = a.iter().map(arg_int).collect();
        seq(c, &p)
    });
    add("split", vec![s(), s()], false, |c, a| {
        map_ss(c, || go_split(arg_str(&a[1]), arg_str(&a[0]), -1))
    });
    add("splitList", vec![s(), s()], false, |c, a| {
        strings_of(c, || go_split(arg_str(&a[1]), arg_str(&a[0]), -1))
    });
    add("splitn", vec![s(), i(), s()], false, |c, a| {
        map_ss(c, || {
            go_split(arg_str(&a[2]), arg_str(&a[0]), arg_int(&a[1]))
        })
    });
    add("toStrings", vec![a()], false, |c, a| {
        let items = strslice(c, &a[0])?;
        Ok(Value::slice(Type::slice_of(Type::String), items))
    });
    add("until", vec![i()], false, |c, a| {
        let n = arg_int(&a[0]);
        until_step(c, 0, n, if n < 0 { -1 } else { 1 })
    });
    add("untilStep", vec![i(), i(), i()], false, |c, a| {
        until_step(c, arg_int(&a[0]), arg_int(&a[1]), arg_int(&a[2]))
    });
    add("add1", vec![a()], false, |_, a| {
        Ok(Value::int64(to_int64(&a[0]).wrapping_add(1)))
    });
    add("add", vec![a()], true, |_, a| {
        Ok(Value::int64(
            a.iter().fold(0i64, |acc, v| acc.wrapping_add(to_int64(v))),
        ))
    });
    add("sub", vec![a(), a()], false, |_, a| {
        Ok(Value::int64(to_int64(&a[0]).wrapping_sub(to_int64(&a[1]))))
    });
    add("div", vec![a(), a()], false, |_, a| {
        let d = to_int64(&a[1]);
        if d == 0 {
            return msg("runtime error: integer divide by zero");
        }
        Ok(Value::int64(to_int64(&a[0]).wrapping_div(d)))
    });
    add("mod", vec![a(), a()], false, |_, a| {
        let d = to_int64(&a[1]);
        if d == 0 {
            return msg("runtime error: integer divide by zero");
        }
        Ok(Value::int64(to_int64(&a[0]).wrapping_rem(d)))
    });
    add("mul", vec![a(), a()], true, |_, a| {
        Ok(Value::int64(
            a[1..]
                .iter()
                .fold(to_int64(&a[0]), |acc, v| acc.wrapping_mul(to_int64(v))),
        ))
    });
    fn max(_: &mut CallCtx, a: Vec<Value>) -> Res {
        Ok(Value::int64(
            a.iter().map(to_int64).fold(to_int64(&a[0]), i64::max),
        ))
    }
    fn min(_: &mut CallCtx, a: Vec<Value>) -> Res {
        Ok(Value::int64(
            a.iter().map(to_int64).fold(to_int64(&a[0]), i64::min),
        ))
    }
    add("max", vec![a(), a()], true, max);
    add("biggest", vec![a(), a()], true, max);
    add("min", vec![a(), a()], true, min);
    add("maxf", vec![a(), a()], true, |_, a| {
        Ok(Value::Float(a[1..].iter().map(to_float64).fold(
            to_float64(&a[0]),
            |x, y| {
                if x.is_nan() || y.is_nan() {
                    f64::NAN
                } else {
                    x.max(y)
                }
            },
        )))
    });
    add("minf", vec![a(), a()], true, |_, a| {
        Ok(Value::Float(a[1..].iter().map(to_float64).fold(
            to_float64(&a[0]),
            |x, y| {
                if x.is_nan() || y.is_nan() {
                    f64::NAN
                } else {
                    x.min(y)
                }
            },
        )))
    });
    add("floor", vec![a()], false, |_, a| {
        Ok(Value::Float(to_float64(&a[0]).floor()))
    });
    add("ceil", vec![a()], false, |_, a| {
        Ok(Value::Float(to_float64(&a[0]).ceil()))
    });
    add("round", vec![a(), i(), t(Type::Float64)], true, |_, a| {
        let round_on = a
            .get(2)
            .map_or(0.5, |v| if let Value::Float(f) = v { *f } else { 0.5 });
        let val = to_float64(&a[0]);
        let pow = 10f64.powf(arg_int(&a[1]) as f64);
        let digit = pow * val;
        let div = digit.fract();
        let r = if div >= round_on {
            digit.ceil()
        } else {
            digit.floor()
        };
        Ok(Value::Float(r / pow))
    });
    for name in ["add1f", "addf", "subf", "divf", "mulf"] {
        add(name, vec![a()], true, unsupported);
    }
}
