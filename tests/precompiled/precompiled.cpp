// The translation unit that compiles precompiled.hpp once (see
// tests/CMakeLists.txt); it has no code of its own.
