//! A CPython extension in Rust with no crates, so it builds without a crate registry: the
//! few C API declarations it uses are written out here (CPython 3.x, GIL build).

use std::ffi::{c_char, c_int, c_long, c_void};
use std::ptr::{null, null_mut};

#[repr(C)]
pub struct PyObject {
    refcnt: isize,
    ob_type: *mut c_void,
}

type Function = unsafe extern "C" fn(*mut PyObject, *mut PyObject) -> *mut PyObject;

#[repr(C)]
pub struct MethodDef {
    name: *const c_char,
    function: Option<Function>,
    flags: c_int,
    doc: *const c_char,
}

#[repr(C)]
pub struct ModuleDefBase {
    object: PyObject,
    init: *mut c_void,
    index: isize,
    copy: *mut c_void,
}

#[repr(C)]
pub struct ModuleDef {
    base: ModuleDefBase,
    name: *const c_char,
    doc: *const c_char,
    size: isize,
    methods: *mut MethodDef,
    slots: *mut c_void,
    traverse: *mut c_void,
    clear: *mut c_void,
    free: *mut c_void,
}

const METH_NOARGS: c_int = 0x4;
const METH_O: c_int = 0x8;

extern "C" {
    fn PyModuleDef_Init(def: *mut ModuleDef) -> *mut PyObject;
    fn PyLong_FromLong(value: c_long) -> *mut PyObject;
    fn PyLong_AsLong(object: *mut PyObject) -> c_long;
    fn PyErr_Occurred() -> *mut PyObject;
    fn PyErr_SetString(exception: *mut PyObject, message: *const c_char);
    static mut PyExc_OverflowError: *mut PyObject;
}

/// `factorial(n)`, refusing what does not fit a C long.
unsafe extern "C" fn factorial(_module: *mut PyObject, arg: *mut PyObject) -> *mut PyObject {
    let n = PyLong_AsLong(arg);
    if n == -1 && !PyErr_Occurred().is_null() {
        return null_mut();
    }
    let product = (1..=n.max(1)).try_fold(1 as c_long, |acc, k| acc.checked_mul(k));
    match product {
        Some(value) if n >= 0 => PyLong_FromLong(value),
        _ => {
            PyErr_SetString(PyExc_OverflowError, c"factorial out of range".as_ptr());
            null_mut()
        }
    }
}

/// 1 when a panic unwinds to `catch_unwind`: the target's unwinder works in the module.
unsafe extern "C" fn unwinds(_module: *mut PyObject, _arg: *mut PyObject) -> *mut PyObject {
    std::panic::set_hook(Box::new(|_| {}));
    let caught = std::panic::catch_unwind(|| {
        if std::hint::black_box(true) {
            panic!("unwinding");
        }
    })
    .is_err();
    let _ = std::panic::take_hook();
    PyLong_FromLong(c_long::from(caught))
}

static mut METHODS: [MethodDef; 3] = [
    MethodDef {
        name: c"factorial".as_ptr(),
        function: Some(factorial),
        flags: METH_O,
        doc: null(),
    },
    MethodDef {
        name: c"unwinds".as_ptr(),
        function: Some(unwinds),
        flags: METH_NOARGS,
        doc: null(),
    },
    MethodDef {
        name: null(),
        function: None,
        flags: 0,
        doc: null(),
    },
];

static mut MODULE: ModuleDef = ModuleDef {
    base: ModuleDefBase {
        object: PyObject {
            refcnt: 1,
            ob_type: null_mut(),
        },
        init: null_mut(),
        index: 0,
        copy: null_mut(),
    },
    name: c"rustproj._rustproj".as_ptr(),
    doc: null(),
    size: 0,
    methods: null_mut(),
    slots: null_mut(),
    traverse: null_mut(),
    clear: null_mut(),
    free: null_mut(),
};

/// # Safety
/// Called once by the interpreter's import machinery, with the GIL held.
#[no_mangle]
pub unsafe extern "C" fn PyInit__rustproj() -> *mut PyObject {
    let module = &raw mut MODULE;
    (*module).methods = (&raw mut METHODS).cast();
    PyModuleDef_Init(module)
}
