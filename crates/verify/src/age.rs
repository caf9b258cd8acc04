//! Minimum release age (placeholder module replaced below).
