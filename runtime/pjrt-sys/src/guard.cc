// A copy of a plugin's PJRT_Api table whose functions catch C++ exceptions.
//
// The PJRT C API promises errors as PJRT_Error values, but a plugin can still let a C++
// exception escape (seen: the XLA CPU plugin throws while compiling a module whose tensor size
// overflows 64 bits). An exception that unwinds into Rust aborts the process ("Rust cannot catch
// foreign exceptions"), taking a user's Python interpreter with it. Every function of the
// guarded table calls the plugin's own inside try/catch and turns an exception into a
// PJRT_Error of ours; PJRT_Error_Destroy/Message/GetCode recognise those errors and forward
// every other one to the plugin.
//
// One table per plugin loaded (up to kSlots distinct plugins per process; past that the
// original table is returned and fxhlo_pjrt_guard_api reports it by returning it unchanged).

#include <cstddef>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <unordered_set>

#include "pjrt_c_api.h"

namespace {

constexpr int kSlots = 4;

struct Slot {
  const PJRT_Api* original = nullptr;
  PJRT_Api plugin{};   // a copy of the plugin's table (what the trampolines call)
  PJRT_Api guarded{};  // the table handed out
};

Slot slots[kSlots];
std::mutex slots_mutex;

// An error made from an exception. Kept in `live` so that the error functions can tell ours
// from the plugin's without reading the plugin's objects.
struct GuardError {
  PJRT_Error_Code code;
  std::string message;
};

std::mutex live_mutex;
std::unordered_set<const void*>& live() {
  static auto* set = new std::unordered_set<const void*>();
  return *set;
}

bool is_ours(const PJRT_Error* e) {
  std::lock_guard<std::mutex> lock(live_mutex);
  return live().count(e) != 0;
}

// The one error returned when even the message cannot be allocated; never freed.
GuardError out_of_memory{PJRT_Error_Code_RESOURCE_EXHAUSTED,
                         "the PJRT plugin ran out of memory (std::bad_alloc escaped it)"};

PJRT_Error* make_error(PJRT_Error_Code code, const char* function, const char* what) {
  try {
    auto* e = new GuardError{code, std::string("the PJRT plugin threw a C++ exception in ") +
                                       function + ": " + what};
    std::lock_guard<std::mutex> lock(live_mutex);
    live().insert(e);
    return reinterpret_cast<PJRT_Error*>(e);
  } catch (...) {
    return reinterpret_cast<PJRT_Error*>(&out_of_memory);
  }
}

bool is_static(const PJRT_Error* e) { return e == reinterpret_cast<PJRT_Error*>(&out_of_memory); }

template <typename M>
struct MemberArgs;
template <typename A>
struct MemberArgs<PJRT_Error* (*PJRT_Api::*)(A*)> {
  using type = A;
};

template <int S, typename M, M Member>
PJRT_Error* trampoline(typename MemberArgs<M>::type* args, const char* name) {
  try {
    return (slots[S].plugin.*Member)(args);
  } catch (const std::bad_alloc& e) {
    return make_error(PJRT_Error_Code_RESOURCE_EXHAUSTED, name, e.what());
  } catch (const std::exception& e) {
    return make_error(PJRT_Error_Code_INTERNAL, name, e.what());
  } catch (...) {
    return make_error(PJRT_Error_Code_INTERNAL, name, "an exception that is not a std::exception");
  }
}

template <int S>
void error_destroy(PJRT_Error_Destroy_Args* args) {
  if (is_static(args->error)) return;
  if (is_ours(args->error)) {
    {
      std::lock_guard<std::mutex> lock(live_mutex);
      live().erase(args->error);
    }
    delete reinterpret_cast<GuardError*>(args->error);
    return;
  }
  slots[S].plugin.PJRT_Error_Destroy(args);
}

template <int S>
void error_message(PJRT_Error_Message_Args* args) {
  if (is_static(args->error) || is_ours(args->error)) {
    const auto* e = reinterpret_cast<const GuardError*>(args->error);
    args->message = e->message.c_str();
    args->message_size = e->message.size();
    return;
  }
  slots[S].plugin.PJRT_Error_Message(args);
}

template <int S>
PJRT_Error* error_get_code(PJRT_Error_GetCode_Args* args) {
  if (is_static(args->error) || is_ours(args->error)) {
    args->code = reinterpret_cast<const GuardError*>(args->error)->code;
    return nullptr;
  }
  return slots[S].plugin.PJRT_Error_GetCode(args);
}

// Whether `field` lies inside the plugin's table (an older plugin has a shorter one).
bool has(const PJRT_Api& api, size_t offset) { return offset + sizeof(void*) <= api.struct_size; }

template <int S>
void install(Slot& slot) {
  PJRT_Api& g = slot.guarded;
#define FXHLO_GUARD(name)                                                                   \
  if (has(g, offsetof(PJRT_Api, name)) && g.name != nullptr) {                              \
    g.name = [](name##_Args* args) {                                                        \
      return trampoline<S, decltype(&PJRT_Api::name), &PJRT_Api::name>(args, #name);        \
    };                                                                                      \
  }
#include "guard_fields.inc"
#undef FXHLO_GUARD
  g.PJRT_Error_Destroy = &error_destroy<S>;
  g.PJRT_Error_Message = &error_message<S>;
  g.PJRT_Error_GetCode = &error_get_code<S>;
}

template <int S>
void install_at(int slot, Slot& s) {
  if constexpr (S < kSlots) {
    if (slot == S) {
      install<S>(s);
    } else {
      install_at<S + 1>(slot, s);
    }
  }
}

}  // namespace

extern "C" const PJRT_Api* fxhlo_pjrt_guard_api(const PJRT_Api* api) {
  if (api == nullptr) return api;
  std::lock_guard<std::mutex> lock(slots_mutex);
  for (int i = 0; i < kSlots; ++i) {
    if (slots[i].original == api) return &slots[i].guarded;
  }
  for (int i = 0; i < kSlots; ++i) {
    Slot& s = slots[i];
    if (s.original != nullptr) continue;
    // Copy what both the plugin and this header know of; the bindings use no more.
    size_t size = api->struct_size < sizeof(PJRT_Api) ? api->struct_size : sizeof(PJRT_Api);
    std::memcpy(&s.plugin, api, size);
    std::memcpy(&s.guarded, api, size);
    s.plugin.struct_size = size;
    s.guarded.struct_size = size;
    s.original = api;
    install_at<0>(i, s);
    return &s.guarded;
  }
  return api;
}
