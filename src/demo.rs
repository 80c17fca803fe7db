//! `smelt demo`: an eager-looking program, its lazy graph, the kernels it ran, its result.

use smelt::prelude::*;
use std::process::ExitCode;

pub fn run() -> ExitCode {
    println!("== smelt demo: eager-looking code, lazy execution ==\n");
    let a = Tensor::new([[1.0f32, -2.0, 3.0], [-4.0, 5.0, -6.0]]);
    let b = Tensor::arange(0, 6, 1, Some(DType::F32)).view(&[2, 3]);
    println!("let a = Tensor::new([[1., -2., 3.], [-4., 5., -6.]]);");
    println!("let b = Tensor::arange(0, 6, 1, f32).view(&[2, 3]);");
    println!("let y = (a.t().relu() * 0.5 + b.t()).exp();   // nothing has run yet\n");
    let y = ((a.t().relu() * 0.5) + b.t()).exp();
    println!(
        "y: shape {:?}, stride {:?}, realized: {}\n",
        y.shape(),
        y.stride(),
        y.is_realized()
    );
    println!("-- the lazy graph (text) --\n{}", y.graph());
    let fused = smelt::explain(&y);
    let unfused = smelt::explain_mode(&y, smelt::Mode::Unfused);
    println!(
        "-- the kernels it will run: {} fused (vs {} unfused, one per op) --\n{}",
        fused.kernels.len(),
        unfused.kernels.len(),
        fused
    );
    println!("-- result --\ny = {y}\n");
    println!("realized now: {}", y.is_realized());
    ExitCode::SUCCESS
}
