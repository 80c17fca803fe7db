//! [`CpuJit`]: the long-lived half of the cranelift backend. It owns the JIT module, the
//! codegen context and the function-builder context, reused for every kernel.

use super::helpers::{HELPERS, HelperSig};
use super::prefetch;
use super::stream;
use super::translate::{Helpers, Translator};
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::{AbiParam, Type, UserFuncName, types};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::{Context, ir};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module, ModuleReloc, default_libcall_names};
use smelt_ir::kernel::Kernel;
use std::fmt;

/// The native entry point of a compiled kernel (see the module docs for the ABI).
pub type KernelFn = unsafe extern "C" fn(*const *mut u8, *const i64, *const i64, i64, i64);

/// Why a kernel cannot be compiled; the runtime runs it on the reference interpreter instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported(pub String);

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A finished kernel: its entry point and how it was built. The code lives as long as the
/// [`CpuJit`] that compiled it.
#[derive(Clone, Debug)]
pub struct CompiledKernel {
    pub entry: KernelFn,
    /// Whether the innermost loop runs 128-bit SIMD.
    pub simd: bool,
    /// How many software prefetches its code holds (`prefetch.rs`).
    pub prefetches: usize,
    /// How many streaming stores it holds (`stream.rs`): none but in a streaming variant.
    pub streams: usize,
    /// For SIMD code of a column reduction along dim 0 (`x.sum(0)`): the rows of its widest
    /// column blocks, which a launch's tasks should cover whole (a task's leftover rows run in
    /// narrower code).
    pub column_rows: Option<usize>,
    /// The CLIF text of the function, kept for dumps.
    pub clif: String,
    /// The machine code as cranelift's disassembly (`SMELT_DUMP=asm`), else empty.
    pub asm: String,
}

// SAFETY: the entry point is immutable machine code owned by the JIT, which is never freed
// while the process runs (the runtime keeps its `CpuJit` in a static).
unsafe impl Send for CompiledKernel {}
unsafe impl Sync for CompiledKernel {}

/// The JIT: module, contexts and the declared helpers.
pub struct CpuJit {
    module: JITModule,
    ctx: Context,
    fctx: FunctionBuilderContext,
    helpers: Vec<FuncId>,
    compiled: usize,
}

impl fmt::Debug for CpuJit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuJit({} kernels)", self.compiled)
    }
}

fn helper_signature(module: &JITModule, sig: HelperSig) -> ir::Signature {
    let mut s = module.make_signature();
    let (params, ret): (&[Type], Type) = match sig {
        HelperSig::UnaryF64 => (&[types::I64, types::F64], types::F64),
        HelperSig::BinaryF64 => (&[types::I64, types::F64, types::F64], types::F64),
        HelperSig::UnaryI64 => (&[types::I64, types::I64], types::I64),
        HelperSig::BinaryI64 => (&[types::I64, types::I64, types::I64], types::I64),
        HelperSig::Random => (&[types::I64; 4], types::I64),
    };
    s.params.extend(params.iter().map(|t| AbiParam::new(*t)));
    s.returns.push(AbiParam::new(ret));
    s
}

impl CpuJit {
    /// A JIT for the host machine. `symbols` gives the address of every helper in [`HELPERS`].
    pub fn new(symbols: &[(&str, *const u8)]) -> Result<CpuJit, Unsupported> {
        let mut flags = settings::builder();
        let set = |flags: &mut settings::Builder, k: &str, v: &str| {
            flags
                .set(k, v)
                .map_err(|e| Unsupported(format!("cranelift flag {k}: {e}")))
        };
        set(&mut flags, "opt_level", "speed")?;
        set(&mut flags, "use_colocated_libcalls", "false")?;
        set(&mut flags, "is_pic", "false")?;
        let isa = cranelift_native::builder()
            .map_err(|e| Unsupported(format!("host machine not supported by cranelift: {e}")))?
            .finish(settings::Flags::new(flags))
            .map_err(|e| Unsupported(format!("cranelift ISA: {e}")))?;
        let mut builder = JITBuilder::with_isa(isa, default_libcall_names());
        for (name, _) in HELPERS {
            let Some((_, addr)) = symbols.iter().find(|(n, _)| *n == name) else {
                return Err(Unsupported(format!("helper {name} not registered")));
            };
            builder.symbol(name, *addr);
        }
        let mut module = JITModule::new(builder);
        let mut helpers = vec![];
        for (name, sig) in HELPERS {
            let s = helper_signature(&module, sig);
            let id = module
                .declare_function(name, Linkage::Import, &s)
                .map_err(|e| Unsupported(format!("declaring {name}: {e}")))?;
            helpers.push(id);
        }
        Ok(CpuJit {
            ctx: module.make_context(),
            module,
            fctx: FunctionBuilderContext::new(),
            helpers,
            compiled: 0,
        })
    }

    /// How many kernels this JIT compiled.
    pub fn compiled(&self) -> usize {
        self.compiled
    }

    /// Compiles `kernel`, with a SIMD innermost loop where the kernel allows one, and software
    /// prefetches ahead of its streamed loads (`prefetch.rs`).
    pub fn compile(&mut self, kernel: &Kernel) -> Result<CompiledKernel, Unsupported> {
        self.compile_simd(kernel, false)
            .or_else(|_| self.compile_with(kernel, false, false, false))
    }

    /// The streaming variant of `kernel` (`stream.rs`): [`Self::compile`]'s SIMD code with its
    /// full f32x4 output stores as streaming stores, its stash in a scratch row, and a fence at
    /// the end. Only for launches whose every vector store is 16-byte aligned. Fails where the
    /// kernel has no SIMD form or no such store.
    pub fn compile_streaming(&mut self, kernel: &Kernel) -> Result<CompiledKernel, Unsupported> {
        let code = self.compile_simd(kernel, true)?;
        if code.streams == 0 {
            return Err(Unsupported("no streaming store".into()));
        }
        Ok(code)
    }

    /// SIMD code for `kernel`, with software prefetches unless `SMELT_PREFETCH=0` or their
    /// rewrite fails (then without).
    fn compile_simd(
        &mut self,
        kernel: &Kernel,
        streaming: bool,
    ) -> Result<CompiledKernel, Unsupported> {
        let prefetch = std::env::var("SMELT_PREFETCH").map_or(true, |v| v != "0");
        self.compile_with(kernel, true, prefetch, streaming)
            .or_else(|e| match prefetch {
                true => self.compile_with(kernel, true, false, streaming),
                false => Err(e),
            })
    }

    fn compile_with(
        &mut self,
        kernel: &Kernel,
        simd: bool,
        prefetch: bool,
        streaming: bool,
    ) -> Result<CompiledKernel, Unsupported> {
        let errors = kernel.verify();
        if !errors.is_empty() {
            return Err(Unsupported(format!("kernel does not verify: {errors:?}")));
        }
        self.module.clear_context(&mut self.ctx);
        let ptr = self.module.target_config().pointer_type();
        if ptr != types::I64 {
            return Err(Unsupported("only 64-bit hosts are supported".into()));
        }
        let sig = &mut self.ctx.func.signature;
        for _ in 0..3 {
            sig.params.push(AbiParam::new(ptr));
        }
        sig.params.push(AbiParam::new(types::I64));
        sig.params.push(AbiParam::new(types::I64));
        self.ctx.func.name = UserFuncName::user(0, self.compiled as u32);
        let refs: Vec<ir::FuncRef> = self
            .helpers
            .iter()
            .map(|id| self.module.declare_func_in_func(*id, &mut self.ctx.func))
            .collect();
        let helpers = Helpers::from_refs(&refs);
        let target = self.module.target_config();
        let built = {
            let b = FunctionBuilder::new(&mut self.ctx.func, &mut self.fctx);
            Translator::new(b, kernel, helpers, simd, prefetch, streaming).translate(target)
        };
        if let Err(e) = built {
            // An abandoned build leaves the builder context dirty.
            self.fctx = FunctionBuilderContext::new();
            self.module.clear_context(&mut self.ctx);
            return Err(e);
        }
        let clif = self.ctx.func.display().to_string();
        let id = self
            .module
            .declare_anonymous_function(&self.ctx.func.signature)
            .map_err(|e| Unsupported(format!("declare: {e}")))?;
        let want_asm = smelt_ir::dump_requested("asm");
        self.ctx.set_disasm(want_asm);
        let defined = self.define(id);
        self.module.clear_context(&mut self.ctx);
        let (asm, prefetches, streams) = defined?;
        self.module
            .finalize_definitions()
            .map_err(|e| Unsupported(format!("finalize: {e}")))?;
        let code = self.module.get_finalized_function(id);
        self.compiled += 1;
        // SAFETY: `code` is the entry of the function just defined with the kernel ABI signature
        // (three pointers, two i64, no result, the platform's C calling convention).
        let entry = unsafe { std::mem::transmute::<*const u8, KernelFn>(code) };
        Ok(CompiledKernel {
            entry,
            simd,
            prefetches,
            streams,
            column_rows: if simd {
                super::column_task_rows(kernel)
            } else {
                None
            },
            clif,
            asm,
        })
    }

    /// Compiles the function in the context, turns its prefetch loads into prefetches
    /// (`prefetch::patch`) and its streaming stores' `movups` into `movntps` (`stream::patch`),
    /// and defines the bytes as function `id`. Returns the disassembly (when one was asked for;
    /// it shows each instruction as it was before the rewrite), the number of prefetches and
    /// the number of streaming stores.
    fn define(&mut self, id: FuncId) -> Result<(String, usize, usize), Unsupported> {
        self.ctx
            .compile(self.module.isa(), &mut ControlPlane::default())
            .map_err(|e| Unsupported(format!("cranelift: {:?}", e.inner)))?;
        let compiled = self
            .ctx
            .compiled_code()
            .ok_or_else(|| Unsupported("cranelift: no code after compiling".into()))?;
        let mut code = compiled.code_buffer().to_vec();
        // Where the instructions flagged with `code` start.
        let marked = |code: ir::TrapCode| -> Vec<usize> {
            let traps = compiled.buffer.traps().iter();
            traps
                .filter(|t| t.code == code)
                .map(|t| t.offset as usize)
                .collect()
        };
        let mut prefetches = 0;
        for hint in prefetch::Hint::ALL {
            let sites = marked(hint.trap());
            prefetch::patch(&mut code, &sites, hint).map_err(Unsupported)?;
            prefetches += sites.len();
        }
        let streams = marked(stream::STREAM);
        stream::patch(&mut code, &streams).map_err(Unsupported)?;
        let relocs: Vec<ModuleReloc> = compiled
            .buffer
            .relocs()
            .iter()
            .map(|r| ModuleReloc::from_mach_reloc(r, &self.ctx.func, id))
            .collect();
        let alignment = u64::from(compiled.buffer.alignment);
        let asm = compiled.vcode.clone().unwrap_or_default();
        self.module
            .define_function_bytes(id, alignment, &code, &relocs)
            .map_err(|e| Unsupported(format!("cranelift: {e:?}")))?;
        Ok((asm, prefetches, streams.len()))
    }
}
