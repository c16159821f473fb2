${banner}
// The definitions of libtorch_cpu.so that this patch's formulas use and
// that libtorch keeps local (hidden: not in its dynamic symbol table):
// FunctionsManual's helpers, `TypeAndSize::zeros`, ...  Each is defined
// here under the very name the installed headers' declarations give a call
// (the symbol the patch's objects leave undefined), as a jump through a
// table that this file fills, as the patch loads, with libtorch's load
// address plus the definition's offset, read off libtorch's own symbol
// table when the patch was built
// (site_scons/autograd_scons/torch_patch/libtorch_locals.py).  Data is
// copied from libtorch's definition then.  The offsets are those of one
// build of libtorch: before using them, the library loaded is checked to
// be that one (its GNU build id, and an exported function found where its
// offset says).
#if !defined(__x86_64__) || !defined(__linux__)
#error "a patch reaches libtorch's local definitions on x86-64 Linux only"
#endif

#include <dlfcn.h>
#include <link.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

${declarations}

// The jump table the functions below go through: this library's own.
extern "C" {
__attribute__((visibility("hidden"))) void* autograd_scons_libtorch_locals[${function_count} + 1];
}

${data_copies}

namespace {

// Offsets in libtorch_cpu.so of the functions, in table order.
constexpr std::size_t kFunctionCount = ${function_count};
constexpr std::uintptr_t kFunctionOffsets[kFunctionCount + 1] = {
    ${function_offsets}
};

struct Data {
  std::uintptr_t offset;  // in libtorch_cpu.so
  std::size_t size;
  void* copy;             // this library's definition
};

constexpr std::size_t kDataCount = ${data_count};
const Data kData[kDataCount + 1] = {
    ${data}
};

constexpr unsigned char kBuildId[] = {${build_id}};
constexpr const char* kAnchor = "${anchor}";
constexpr std::uintptr_t kAnchorOffset = ${anchor_offset};

[[noreturn]] void unreached() {
  std::fprintf(stderr,
               "autograd_scons: the patch called a definition of libtorch's that it could not reach as it "
               "loaded (said then, above): aborting\n");
  std::abort();
}

struct BuildIdSearch {
  std::uintptr_t base;
  bool same;
};

// Whether the object loaded at `search->base` carries kBuildId.
int compare_build_id(dl_phdr_info* info, size_t /*size*/, void* data) {
  auto* search = static_cast<BuildIdSearch*>(data);
  if (info->dlpi_addr != search->base) {
    return 0;
  }
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_NOTE) {
      continue;
    }
    auto at = reinterpret_cast<const unsigned char*>(info->dlpi_addr + segment.p_vaddr);
    const unsigned char* end = at + segment.p_memsz;
    while (at + sizeof(ElfW(Nhdr)) <= end) {
      auto note = reinterpret_cast<const ElfW(Nhdr)*>(at);
      const unsigned char* name = at + sizeof(ElfW(Nhdr));
      const unsigned char* desc = name + ((note->n_namesz + 3) & ~3u);
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        search->same = note->n_descsz == sizeof(kBuildId) && std::memcmp(desc, kBuildId, sizeof(kBuildId)) == 0;
        return 1;
      }
      at = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return 1;
}

// libtorch_cpu.so's load address (what its symbol values are relative
// to), or a reason why its offsets cannot be used.
const char* libtorch_base(std::uintptr_t* base) {
  void* torch = dlopen("libtorch_cpu.so", RTLD_LAZY | RTLD_NOLOAD);
  if (torch == nullptr) {
    return "libtorch_cpu.so is not loaded";
  }
  link_map* map = nullptr;
  const char* problem = nullptr;
  if (dlinfo(torch, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr) {
    problem = "libtorch_cpu.so's load address is unknown";
  } else {
    BuildIdSearch search{map->l_addr, false};
    dl_iterate_phdr(&compare_build_id, &search);
    if (!search.same) {
      problem = "the libtorch_cpu.so loaded is not the one the patch was built for (another GNU build id)";
    } else if (dlsym(torch, kAnchor) != reinterpret_cast<void*>(map->l_addr + kAnchorOffset)) {
      problem = "libtorch_cpu.so's exported functions are not where its symbol table says";
    }
    *base = map->l_addr;
  }
  dlclose(torch);
  return problem;
}

__attribute__((constructor)) void reach_libtorch_locals() {
  for (void*& slot : autograd_scons_libtorch_locals) {
    slot = reinterpret_cast<void*>(&unreached);
  }
  std::uintptr_t base = 0;
  const char* problem = libtorch_base(&base);
  if (problem != nullptr) {
    std::fprintf(stderr, "autograd_scons: the patch cannot reach libtorch's local definitions: %s\n", problem);
    return;
  }
  for (std::size_t i = 0; i < kFunctionCount; ++i) {
    autograd_scons_libtorch_locals[i] = reinterpret_cast<void*>(base + kFunctionOffsets[i]);
  }
  for (std::size_t i = 0; i < kDataCount; ++i) {
    std::memcpy(kData[i].copy, reinterpret_cast<const void*>(base + kData[i].offset), kData[i].size);
  }
}

}  // namespace

${functions}
