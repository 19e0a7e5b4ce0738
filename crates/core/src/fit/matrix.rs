//! A dense row-major matrix of `f64`, the shared currency of the least-squares solvers.
//!
//! It stores `rows * cols` numbers with element `(i, j)` at `data[i * cols + j]`. It offers only
//! what the solvers and their callers need (construction with checks, products with a vector,
//! column selection); it is not meant for large or sparse problems.

use crate::error::{Error, Result};

/// A dense matrix stored row by row.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    rows: usize,
    cols: usize,
    data: Vec<f64>,
}

impl Matrix {
    /// A matrix from row-major data; `data.len()` must equal `rows * cols`.
    pub fn new(rows: usize, cols: usize, data: Vec<f64>) -> Result<Self> {
        if rows.checked_mul(cols) != Some(data.len()) {
            return Err(Error::invalid(
                "matrix",
                format!(
                    "{rows} x {cols} needs {} numbers, got {}",
                    rows.saturating_mul(cols),
                    data.len()
                ),
            ));
        }
        Ok(Self { rows, cols, data })
    }

    /// A matrix of zeros.
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Self {
            rows,
            cols,
            data: vec![0.0; rows * cols],
        }
    }

    /// A matrix from a slice of equally long rows.
    pub fn from_rows<R: AsRef<[f64]>>(rows: &[R]) -> Result<Self> {
        let cols = rows.first().map_or(0, |r| r.as_ref().len());
        let mut data = Vec::with_capacity(rows.len() * cols);
        for (i, r) in rows.iter().enumerate() {
            let r = r.as_ref();
            if r.len() != cols {
                return Err(Error::invalid(
                    "matrix",
                    format!("row {i} has {} numbers, row 0 has {cols}", r.len()),
                ));
            }
            data.extend_from_slice(r);
        }
        Ok(Self {
            rows: rows.len(),
            cols,
            data,
        })
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The row-major data.
    pub fn data(&self) -> &[f64] {
        &self.data
    }

    /// Element `(i, j)`. Panics if out of range (a programming error, never user input).
    pub fn get(&self, i: usize, j: usize) -> f64 {
        assert!(i < self.rows && j < self.cols, "matrix index out of range");
        self.data[i * self.cols + j]
    }

    /// Sets element `(i, j)`. Panics if out of range.
    pub fn set(&mut self, i: usize, j: usize, value: f64) {
        assert!(i < self.rows && j < self.cols, "matrix index out of range");
        self.data[i * self.cols + j] = value;
    }

    /// Row `i` as a slice.
    pub fn row(&self, i: usize) -> &[f64] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }

    /// `A x`; `x.len()` must equal `cols`.
    pub fn mul_vec(&self, x: &[f64]) -> Vec<f64> {
        assert_eq!(x.len(), self.cols, "mul_vec: length mismatch");
        (0..self.rows)
            .map(|i| self.row(i).iter().zip(x).map(|(a, b)| a * b).sum())
            .collect()
    }

    /// `A^T v`; `v.len()` must equal `rows`.
    pub fn t_mul_vec(&self, v: &[f64]) -> Vec<f64> {
        assert_eq!(v.len(), self.rows, "t_mul_vec: length mismatch");
        let mut out = vec![0.0; self.cols];
        for (i, vi) in v.iter().enumerate() {
            for (o, a) in out.iter_mut().zip(self.row(i)) {
                *o += a * vi;
            }
        }
        out
    }

    /// The matrix made of the given columns, in the given order.
    pub fn select_columns(&self, columns: &[usize]) -> Matrix {
        let mut data = Vec::with_capacity(self.rows * columns.len());
        for i in 0..self.rows {
            let r = self.row(i);
            data.extend(columns.iter().map(|&j| r[j]));
        }
        Matrix {
            rows: self.rows,
            cols: columns.len(),
            data,
        }
    }

    /// The matrix made of the given rows, in the given order.
    pub fn select_rows(&self, rows: &[usize]) -> Matrix {
        let mut data = Vec::with_capacity(rows.len() * self.cols);
        for &i in rows {
            data.extend_from_slice(self.row(i));
        }
        Matrix {
            rows: rows.len(),
            cols: self.cols,
            data,
        }
    }

    /// The largest column sum of absolute values, `||A||_1`.
    pub fn norm_1(&self) -> f64 {
        (0..self.cols)
            .map(|j| (0..self.rows).map(|i| self.get(i, j).abs()).sum::<f64>())
            .fold(0.0, f64::max)
    }

    /// Whether every element is finite.
    pub fn is_finite(&self) -> bool {
        self.data.iter().all(|v| v.is_finite())
    }
}

/// The Euclidean norm `sqrt(sum v_i^2)`, scaled to avoid overflow.
pub fn norm_2(v: &[f64]) -> f64 {
    let scale = v.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    if scale == 0.0 || !scale.is_finite() {
        return scale;
    }
    scale * v.iter().map(|x| (x / scale).powi(2)).sum::<f64>().sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_and_selection() {
        // A = [[1, 2], [3, 4], [5, 6]]
        let a = Matrix::from_rows(&[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]).unwrap();
        assert_eq!(a.mul_vec(&[1.0, -1.0]), vec![-1.0, -1.0, -1.0]);
        // A^T [1,1,1] = [1+3+5, 2+4+6]
        assert_eq!(a.t_mul_vec(&[1.0, 1.0, 1.0]), vec![9.0, 12.0]);
        assert_eq!(a.select_columns(&[1]).data(), &[2.0, 4.0, 6.0]);
        assert_eq!(a.select_rows(&[2, 0]).data(), &[5.0, 6.0, 1.0, 2.0]);
        // column sums: 9 and 12
        assert_eq!(a.norm_1(), 12.0);
        assert!(Matrix::new(2, 2, vec![1.0; 3]).is_err());
        assert!(Matrix::from_rows(&[vec![1.0], vec![1.0, 2.0]]).is_err());
        // 3-4-5 triangle
        assert_eq!(norm_2(&[3.0, 4.0]), 5.0);
    }
}
