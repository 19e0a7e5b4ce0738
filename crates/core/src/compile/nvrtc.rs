//! NVRTC, NVIDIA's runtime compiler library, loaded at run time (`dlopen`): CUDA C++ to PTX in
//! this process, without a GPU or a driver. One call compiles for a real architecture
//! (`--gpu-architecture=sm_XX`) with `--ptxas-options=-v`, which yields both the PTX and, in the
//! program log, the ptxas resource report (registers, spills, shared and local memory).
//!
//! The library is found by `compile::locate` and kept loaded for the life of the process.
//! Programs are independent, so compilations may run on several threads at once.
//!
//! What it does NOT do: link, produce or keep CUBINs, or load modules on a GPU.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

type Program = *mut c_void;
type Status = c_int;

const SUCCESS: Status = 0;

type VersionFn = unsafe extern "C" fn(*mut c_int, *mut c_int) -> Status;
type CountFn = unsafe extern "C" fn(*mut c_int) -> Status;
type ListFn = unsafe extern "C" fn(*mut c_int) -> Status;
type ErrorStringFn = unsafe extern "C" fn(Status) -> *const c_char;
type CreateFn = unsafe extern "C" fn(
    *mut Program,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> Status;
type DestroyFn = unsafe extern "C" fn(*mut Program) -> Status;
type CompileFn = unsafe extern "C" fn(Program, c_int, *const *const c_char) -> Status;
type SizeFn = unsafe extern "C" fn(Program, *mut usize) -> Status;
type GetFn = unsafe extern "C" fn(Program, *mut c_char) -> Status;

/// A loaded NVRTC library.
pub struct Nvrtc {
    pub path: PathBuf,
    pub version: (i32, i32),
    /// The `sm_XX` numbers it compiles for, ascending (`nvrtcGetSupportedArchs`, CUDA 11.2
    /// and later; `None` for an older library).
    pub supported_archs: Option<Vec<u32>>,
    error_string: ErrorStringFn,
    create: CreateFn,
    destroy: DestroyFn,
    compile: CompileFn,
    ptx_size: SizeFn,
    ptx: GetFn,
    log_size: SizeFn,
    log: GetFn,
}

// The function pointers stay valid for the life of the process (the library is never closed)
// and NVRTC programs are independent objects.
unsafe impl Send for Nvrtc {}
unsafe impl Sync for Nvrtc {}

/// What one compilation produced.
pub struct Output {
    /// The PTX, when the compilation succeeded.
    pub ptx: Option<String>,
    pub log: String,
    /// NVRTC's name for the status when it is not success.
    pub status: Option<String>,
}

#[cfg(unix)]
fn open(path: &Path) -> std::result::Result<*mut c_void, String> {
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| "the path holds a NUL byte")?;
    // SAFETY: dlopen with a valid C string; the handle is never closed.
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if h.is_null() {
        // SAFETY: dlerror returns a thread-local message or NULL.
        let msg = unsafe { libc::dlerror() };
        let text = if msg.is_null() {
            "dlopen failed".to_string()
        } else {
            unsafe { CStr::from_ptr(msg) }
                .to_string_lossy()
                .into_owned()
        };
        return Err(text);
    }
    Ok(h)
}

#[cfg(not(unix))]
fn open(_path: &Path) -> std::result::Result<*mut c_void, String> {
    Err("loading NVRTC at run time is implemented for Unix-like systems only".into())
}

#[cfg(unix)]
fn symbol(handle: *mut c_void, name: &str) -> std::result::Result<*mut c_void, String> {
    let c = CString::new(name).map_err(|_| "bad symbol name")?;
    // SAFETY: a valid handle from dlopen and a valid C string.
    let p = unsafe { libc::dlsym(handle, c.as_ptr()) };
    if p.is_null() {
        Err(format!("it has no symbol {name}"))
    } else {
        Ok(p)
    }
}

#[cfg(not(unix))]
fn symbol(_handle: *mut c_void, name: &str) -> std::result::Result<*mut c_void, String> {
    Err(format!("no symbol {name}"))
}

/// The architectures a loaded NVRTC compiles for, ascending, when it can say.
fn supported_archs(h: *mut c_void) -> Option<Vec<u32>> {
    let count = symbol(h, "nvrtcGetNumSupportedArchs").ok()?;
    let list = symbol(h, "nvrtcGetSupportedArchs").ok()?;
    // SAFETY: NVRTC's functions of these names (nvrtc.h): one writes the count, the other that
    // many integers.
    unsafe {
        let count = std::mem::transmute::<*mut c_void, CountFn>(count);
        let list = std::mem::transmute::<*mut c_void, ListFn>(list);
        let mut n: c_int = 0;
        if count(&mut n) != SUCCESS || !(1..=1024).contains(&n) {
            return None;
        }
        let mut archs = vec![0 as c_int; n as usize];
        if list(archs.as_mut_ptr()) != SUCCESS {
            return None;
        }
        let mut archs: Vec<u32> = archs
            .into_iter()
            .filter_map(|a| u32::try_from(a).ok())
            .collect();
        archs.sort_unstable();
        archs.dedup();
        Some(archs)
    }
}

impl Nvrtc {
    /// Loads the library at `path`; the error says why it is not usable.
    pub fn load(path: &Path) -> Result<Nvrtc> {
        let fail = |m: String| Error::file(path, format!("cannot be used as NVRTC: {m}"));
        let h = open(path).map_err(fail)?;
        let get = |name: &str| symbol(h, name).map_err(fail);
        // SAFETY: each symbol is NVRTC's function of that name, whose C signature the type
        // aliases above spell out (nvrtc.h).
        let lib = unsafe {
            Nvrtc {
                path: path.to_path_buf(),
                version: (0, 0),
                supported_archs: None,
                error_string: std::mem::transmute::<*mut c_void, ErrorStringFn>(get(
                    "nvrtcGetErrorString",
                )?),
                create: std::mem::transmute::<*mut c_void, CreateFn>(get("nvrtcCreateProgram")?),
                destroy: std::mem::transmute::<*mut c_void, DestroyFn>(get("nvrtcDestroyProgram")?),
                compile: std::mem::transmute::<*mut c_void, CompileFn>(get("nvrtcCompileProgram")?),
                ptx_size: std::mem::transmute::<*mut c_void, SizeFn>(get("nvrtcGetPTXSize")?),
                ptx: std::mem::transmute::<*mut c_void, GetFn>(get("nvrtcGetPTX")?),
                log_size: std::mem::transmute::<*mut c_void, SizeFn>(get(
                    "nvrtcGetProgramLogSize",
                )?),
                log: std::mem::transmute::<*mut c_void, GetFn>(get("nvrtcGetProgramLog")?),
            }
        };
        let version: VersionFn =
            unsafe { std::mem::transmute::<*mut c_void, VersionFn>(get("nvrtcVersion")?) };
        let (mut major, mut minor) = (0, 0);
        // SAFETY: two valid out-pointers.
        let s = unsafe { version(&mut major, &mut minor) };
        if s != SUCCESS {
            return Err(fail(format!(
                "nvrtcVersion failed ({})",
                lib.status_name(s)
            )));
        }
        Ok(Nvrtc {
            version: (major, minor),
            supported_archs: supported_archs(h),
            ..lib
        })
    }

    fn status_name(&self, s: Status) -> String {
        // SAFETY: nvrtcGetErrorString returns a static string for any status.
        let p = unsafe { (self.error_string)(s) };
        if p.is_null() {
            format!("status {s}")
        } else {
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    }

    /// Compiles `source` (named `name` in diagnostics) with `options`.
    pub fn compile(&self, source: &str, name: &str, options: &[String]) -> Result<Output> {
        let bad = |what: &str| Error::invalid("compile", format!("{what} holds a NUL byte"));
        let src = CString::new(source).map_err(|_| bad("the kernel source"))?;
        let cname = CString::new(name).map_err(|_| bad("the kernel file name"))?;
        let opts: Vec<CString> = options
            .iter()
            .map(|o| CString::new(o.as_str()).map_err(|_| bad("a compiler option")))
            .collect::<Result<_>>()?;
        let ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        let mut prog: Program = std::ptr::null_mut();
        // SAFETY: valid C strings; no headers.
        let s = unsafe {
            (self.create)(
                &mut prog,
                src.as_ptr(),
                cname.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        if s != SUCCESS {
            return Err(Error::invalid(
                "compile",
                format!("NVRTC could not create a program: {}", self.status_name(s)),
            ));
        }
        // SAFETY: `prog` is a live program; `ptrs` points at `opts`, alive for the call.
        let status = unsafe { (self.compile)(prog, ptrs.len() as c_int, ptrs.as_ptr()) };
        let log = self.read(prog, self.log_size, self.log).unwrap_or_default();
        let ptx = if status == SUCCESS {
            self.read(prog, self.ptx_size, self.ptx)
        } else {
            None
        };
        // SAFETY: destroys the program created above exactly once.
        unsafe { (self.destroy)(&mut prog) };
        Ok(Output {
            ptx,
            log,
            status: (status != SUCCESS).then(|| self.status_name(status)),
        })
    }

    fn read(&self, prog: Program, size: SizeFn, get: GetFn) -> Option<String> {
        let mut n = 0usize;
        // SAFETY: a live program and a valid out-pointer.
        if unsafe { size(prog, &mut n) } != SUCCESS {
            return None;
        }
        let mut buf = vec![0u8; n.max(1)];
        // SAFETY: the buffer holds the size NVRTC reported.
        if unsafe { get(prog, buf.as_mut_ptr().cast()) } != SUCCESS {
            return None;
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        buf.truncate(end);
        Some(String::from_utf8_lossy(&buf).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_nvrtc_is_refused_with_its_name() {
        let e = Nvrtc::load(Path::new("/nonexistent/libnvrtc.so.12"))
            .err()
            .expect("no such library")
            .to_string();
        assert!(
            e.contains("/nonexistent/libnvrtc.so.12") && e.contains("cannot be used as NVRTC"),
            "{e}"
        );
    }
}
