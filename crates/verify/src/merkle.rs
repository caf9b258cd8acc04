//! RFC 6962 Merkle trees (the transparency log's): leaf and node hashes,
//! and inclusion proofs as RFC 9162 section 2.1.3.2 verifies them.
//!
//! Written here: the algorithm is twenty lines, and the crates that carry
//! it bring a log client with them.

use sha2::{Digest, Sha256};

/// Most hashes in an inclusion proof (a tree of 2^64 leaves needs 64).
pub const MAX_PROOF_HASHES: usize = 64;

/// SHA-256(0x00 || leaf).
pub fn leaf_hash(leaf: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(leaf);
    h.finalize().into()
}

/// SHA-256(0x01 || left || right).
pub fn node_hash(left: &[u8], right: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The root that `proof` leads to from leaf `index` (whose hash is
/// `leaf`) in a tree of `size` leaves, or why it leads nowhere.
///
/// # Errors
/// An index outside the tree, a proof of the wrong length, or a hash
/// that is not 32 bytes.
pub fn root_from_proof(
    index: u64,
    size: u64,
    leaf: [u8; 32],
    proof: &[Vec<u8>],
) -> Result<[u8; 32], String> {
    if index >= size {
        return Err(format!("leaf index {index} is outside a tree of {size}"));
    }
    if proof.len() > MAX_PROOF_HASHES {
        return Err(format!("more than {MAX_PROOF_HASHES} proof hashes"));
    }
    let mut f = index;
    let mut s = size - 1;
    let mut r = leaf;
    for p in proof {
        if p.len() != 32 {
            return Err("a proof hash is not 32 bytes".to_owned());
        }
        if s == 0 {
            return Err("the proof is longer than the tree is deep".to_owned());
        }
        if f & 1 == 1 || f == s {
            r = node_hash(p, &r);
            if f & 1 == 0 {
                while f & 1 == 0 && f != 0 {
                    f >>= 1;
                    s >>= 1;
                }
            }
        } else {
            r = node_hash(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 {
        return Err("the proof is shorter than the tree is deep".to_owned());
    }
    Ok(r)
}

/// The root of a whole tree over `leaves` (RFC 6962 section 2.1): for tests
/// and the test log, which build proofs.
pub fn tree_root(leaves: &[[u8; 32]]) -> [u8; 32] {
    match leaves.len() {
        0 => Sha256::digest([]).into(),
        1 => leaves[0],
        n => {
            let k = split(n);
            node_hash(&tree_root(&leaves[..k]), &tree_root(&leaves[k..]))
        }
    }
}

/// The inclusion proof of leaf `index` among `leaves` (RFC 6962 PATH).
pub fn inclusion_proof(leaves: &[[u8; 32]], index: usize) -> Vec<Vec<u8>> {
    let n = leaves.len();
    if n <= 1 || index >= n {
        return Vec::new();
    }
    let k = split(n);
    if index < k {
        let mut p = inclusion_proof(&leaves[..k], index);
        p.push(tree_root(&leaves[k..]).to_vec());
        p
    } else {
        let mut p = inclusion_proof(&leaves[k..], index - k);
        p.push(tree_root(&leaves[..k]).to_vec());
        p
    }
}

/// The largest power of two smaller than `n` (n > 1).
fn split(n: usize) -> usize {
    let mut k = 1;
    while k << 1 < n {
        k <<= 1;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_leaf_of_every_small_tree() {
        for n in 1..=33usize {
            let leaves: Vec<[u8; 32]> = (0..n).map(|i| leaf_hash(&[i as u8])).collect();
            let root = tree_root(&leaves);
            for i in 0..n {
                let proof = inclusion_proof(&leaves, i);
                assert_eq!(
                    root_from_proof(i as u64, n as u64, leaves[i], &proof),
                    Ok(root),
                    "n={n} i={i}"
                );
                // Another leaf, another index, another size: another root.
                let other = leaf_hash(b"other");
                assert_ne!(root_from_proof(i as u64, n as u64, other, &proof), Ok(root));
                if n > 1 {
                    let j = (i + 1) % n;
                    assert_ne!(
                        root_from_proof(j as u64, n as u64, leaves[i], &proof),
                        Ok(root),
                        "n={n} i={i} j={j}"
                    );
                }
            }
        }
    }

    #[test]
    fn malformed_proofs() {
        let l = leaf_hash(b"x");
        assert!(root_from_proof(1, 1, l, &[]).is_err());
        assert!(root_from_proof(0, 2, l, &[]).is_err());
        assert!(root_from_proof(0, 2, l, &[vec![0; 31]]).is_err());
        assert!(root_from_proof(0, 1, l, &[vec![0; 32]]).is_err());
        assert!(root_from_proof(0, 1, l, &vec![vec![0; 32]; 65]).is_err());
        assert_eq!(root_from_proof(0, 1, l, &[]), Ok(l));
    }
}
