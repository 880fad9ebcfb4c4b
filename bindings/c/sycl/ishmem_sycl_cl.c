/* libishmem_sycl_cl: links the device library into the OpenCL programs a
 * SYCL runtime builds (docs/device.md, "SYCL").
 *
 * A SYCL runtime turns a program's kernels into SPIR-V and builds it with
 * clCreateProgramWithIL and clBuildProgram, which resolve nothing outside
 * the program: the device API's routines stay undefined. This library
 * stands in front of those two entry points (link it into the program
 * before the OpenCL loader, or LD_PRELOAD it). A module that imports a
 * routine of the device API (a name starting with "ishmem") is compiled,
 * linked with ishmem_device.spv and given this PE's device state by
 * libishmem (ishmemx_cl_link_program_in) in the runtime's own context; the
 * runtime's later clBuildProgram of that program does nothing more. Every
 * other program goes to the OpenCL loader untouched. The runtime's build
 * options are not applied to linked programs. */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <dlfcn.h>
#include <ishmem.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef cl_program (*create_il_fn)(cl_context, const void *, size_t, cl_int *);
typedef cl_int (*build_fn)(cl_program, cl_uint, const cl_device_id *, const char *,
                           void (*)(cl_program, void *), void *);
typedef cl_int (*context_info_fn)(cl_context, cl_context_info, size_t, void *, size_t *);

/* The OpenCL loader's entry points behind this library: looked up in the
 * loader itself (its handle searches it and its dependencies, never this
 * library, whatever the order the libraries were loaded in). */
static void *next(const char *name) {
    static void *loader;
    if (!loader) loader = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_GLOBAL);
    void *f = loader ? dlsym(loader, name) : NULL;
    if (!f) {
        fprintf(stderr, "ishmem: libishmem_sycl_cl: %s not found in the OpenCL loader libOpenCL.so.1 (%s)\n", name,
                dlerror());
        abort();
    }
    return f;
}

/* Whether SPIR-V module `il` imports a symbol whose name starts with
 * "ishmem" (OpDecorate id LinkageAttributes "name" Import). */
static int imports_ishmem(const void *il, size_t len) {
    const uint32_t *w = il;
    size_t n = len / 4;
    if (n < 5 || w[0] != 0x07230203u) return 0;
    for (size_t i = 5; i < n;) {
        uint32_t count = w[i] >> 16, op = w[i] & 0xffffu;
        if (count == 0 || i + count > n) return 0;
        /* OpDecorate = 71, LinkageAttributes = 41, Import = 1 */
        if (op == 71 && count >= 5 && w[i + 2] == 41 && w[i + count - 1] == 1 &&
            strncmp((const char *)&w[i + 3], "ishmem", 6) == 0)
            return 1;
        /* Decorations come before the types and functions: stop there. */
        if (op == 54 /* OpFunction */) return 0;
        i += count;
    }
    return 0;
}

/* The programs linked here, which clBuildProgram leaves as they are (a
 * released one's handle may come back for a new program: that one is not
 * built yet). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cl_program *linked;
static size_t n_linked, cap_linked;

static int was_linked(cl_program p, cl_uint num_devices, const cl_device_id *devices) {
    int found = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_linked && !found; i++) found = linked[i] == p;
    pthread_mutex_unlock(&lock);
    if (!found || num_devices == 0 || !devices) return found;
    cl_program_binary_type t = CL_PROGRAM_BINARY_TYPE_NONE;
    return clGetProgramBuildInfo(p, devices[0], CL_PROGRAM_BINARY_TYPE, sizeof t, &t, NULL) == CL_SUCCESS &&
           t == CL_PROGRAM_BINARY_TYPE_EXECUTABLE;
}

cl_program clCreateProgramWithIL(cl_context context, const void *il, size_t length, cl_int *errcode_ret) {
    static create_il_fn real;
    if (!real) real = (create_il_fn)next("clCreateProgramWithIL");
    if (!il || !imports_ishmem(il, length)) return real(context, il, length, errcode_ret);
    static context_info_fn info;
    if (!info) info = (context_info_fn)next("clGetContextInfo");
    cl_device_id device;
    cl_int e = info(context, CL_CONTEXT_DEVICES, sizeof device, &device, NULL);
    if (e != CL_SUCCESS) { /* more than one device: the first */
        size_t size = 0;
        info(context, CL_CONTEXT_DEVICES, 0, NULL, &size);
        cl_device_id *all = malloc(size ? size : sizeof device);
        if (!all || info(context, CL_CONTEXT_DEVICES, size, all, NULL) != CL_SUCCESS) {
            free(all);
            if (errcode_ret) *errcode_ret = CL_INVALID_CONTEXT;
            return NULL;
        }
        device = all[0];
        free(all);
    }
    /* Errors stop the job with libishmem's message (compile or link log). */
    cl_program p = ishmemx_cl_link_program_in(context, device, il, length);
    pthread_mutex_lock(&lock);
    if (n_linked == cap_linked) {
        cap_linked = cap_linked ? 2 * cap_linked : 16;
        cl_program *grown = realloc(linked, cap_linked * sizeof *linked);
        if (!grown) abort();
        linked = grown;
    }
    linked[n_linked++] = p;
    pthread_mutex_unlock(&lock);
    if (errcode_ret) *errcode_ret = CL_SUCCESS;
    return p;
}

cl_int clBuildProgram(cl_program program, cl_uint num_devices, const cl_device_id *device_list, const char *options,
                      void (*pfn_notify)(cl_program, void *), void *user_data) {
    static build_fn real;
    if (!real) real = (build_fn)next("clBuildProgram");
    if (!was_linked(program, num_devices, device_list)) return real(program, num_devices, device_list, options, pfn_notify, user_data);
    if (pfn_notify) pfn_notify(program, user_data);
    return CL_SUCCESS;
}
