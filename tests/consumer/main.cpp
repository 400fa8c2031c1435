// Links against the installed library and calls into it; needs no server.
#include <cstdio>
#include <stdexcept>

#include <zkr/client.hpp>
#include <zkr/lock_factory.hpp>

int main() {
  try {
    zkr::ClientOptions options;
    options.connect_string = "not a host list";
    zkr::Client client(options);
    std::puts("accepted a bad connect string");
    return 1;
  } catch (const std::invalid_argument&) {
  }
  if (zkr::encode_key("a/b") != "a%2Fb") return 1;
  std::puts("consumer ok");
  return 0;
}
