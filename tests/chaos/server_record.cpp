#include "server_record.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>

namespace zkr::chaos {
namespace {

// Transaction types (ZooDefs.OpCode) that change the tree or end a session.
constexpr int kCreate = 1, kDelete = 2, kMulti = 14, kCreate2 = 15, kCreateContainer = 19,
              kDeleteContainer = 20, kCreateTtl = 21, kCloseSession = -11, kError = -1;
constexpr std::uint32_t kLogMagic = 0x5a4b4c47;  // "ZKLG"

// Big-endian jute fields; throws std::out_of_range past the end.
class Jute {
 public:
  explicit Jute(std::string_view bytes) : bytes_(bytes) {}
  std::int64_t long_() { return static_cast<std::int64_t>(take(8)); }
  std::int32_t int_() { return static_cast<std::int32_t>(take(4)); }
  bool bool_() { return take(1) != 0; }
  std::string_view buffer() {  // also a ustring: length, bytes; -1 for null
    const auto n = int_();
    if (n < 0) return {};
    need(static_cast<std::size_t>(n));
    const auto out = bytes_.substr(at_, static_cast<std::size_t>(n));
    at_ += static_cast<std::size_t>(n);
    return out;
  }
  void skip_acl() {
    const auto n = int_();
    for (std::int32_t i = 0; i < n; ++i) {
      (void)int_();    // perms
      (void)buffer();  // scheme
      (void)buffer();  // id
    }
  }
  std::size_t at() const { return at_; }

 private:
  void need(std::size_t n) const {
    if (at_ + n > bytes_.size()) throw std::out_of_range("a truncated record");
  }
  std::uint64_t take(std::size_t n) {
    need(n);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(bytes_[at_ + i]);
    at_ += n;
    return v;
  }
  std::string_view bytes_;
  std::size_t at_ = 0;
};

std::uint32_t adler32(std::string_view bytes) {
  std::uint32_t a = 1, b = 0;
  for (const unsigned char c : bytes) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  return (b << 16) | a;
}

// One change to the tree, as the checker needs it.
struct Change {
  enum Kind { create, remove, close_session } kind;
  std::string path;
  bool ephemeral = false;
};

struct Txn {
  std::int64_t session = 0;
  std::int64_t zxid = 0;
  std::int64_t time_ms = 0;
  std::vector<Change> changes;
  std::string body;  // its meaning, to compare two servers' copies of one zxid
};

// The changes of one transaction body of `type` (a multi's parts included).
void changes_of(int type, std::string_view body, std::vector<Change>& out) {
  Jute in(body);
  switch (type) {
    case kCreate:
    case kCreate2: {  // CreateTxn: path, data, acl, ephemeral, parentCVersion
      const std::string path(in.buffer());
      (void)in.buffer();
      in.skip_acl();
      out.push_back({Change::create, path, in.bool_()});
      return;
    }
    case kCreateContainer:
    case kCreateTtl:  // path, data, acl, ...: never ephemeral
      out.push_back({Change::create, std::string(in.buffer()), false});
      return;
    case kDelete:
    case kDeleteContainer: out.push_back({Change::remove, std::string(in.buffer()), false}); return;
    case kCloseSession: out.push_back({Change::close_session, "", false}); return;
    case kMulti: {
      // A multi with an error part failed as a whole: nothing of it applies.
      // (The leader may log its parts already marked error, the followers as
      // sent: both say the same.)
      std::vector<Change> parts;
      const auto n = in.int_();
      for (std::int32_t i = 0; i < n; ++i) {
        const auto part_type = in.int_();
        const auto part = in.buffer();
        if (part_type == kError) return;
        changes_of(part_type, part, parts);
      }
      out.insert(out.end(), parts.begin(), parts.end());
      return;
    }
    default: return;  // setData, check, createSession, error...: no node is born or dies
  }
}

// Every transaction of one log file, in file order. Stops at the end of the
// written part (the file is preallocated with zeros) or at a torn record.
std::vector<Txn> read_log(const std::string& file, std::vector<std::string>& problems) {
  std::ifstream stream(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(stream)),
                          std::istreambuf_iterator<char>());
  std::vector<Txn> out;
  Jute in(bytes);
  try {
    if (static_cast<std::uint32_t>(in.int_()) != kLogMagic) {
      problems.push_back(file + ": not a ZooKeeper transaction log");
      return out;
    }
    (void)in.int_();   // version
    (void)in.long_();  // dbid
    // Each record: checksum (Adler32), the entry as a buffer, then 'B'.
    while (in.at() + 12 <= bytes.size()) {
      const auto crc = static_cast<std::uint32_t>(in.long_());
      const auto entry = in.buffer();
      if (entry.empty()) break;  // the preallocated zeros: the end
      if (adler32(entry) != crc) {
        problems.push_back(file + ": a record with a bad checksum after zxid " +
                           (out.empty() ? std::string("-") : std::to_string(out.back().zxid)));
        break;
      }
      if (!in.bool_()) break;  // the end-of-record byte: a torn record
      // TxnHeader: clientId, cxid, zxid, time, type; then the body (and, in
      // 3.6+, a digest after it, which changes_of never reads).
      Jute txn(entry);
      Txn t;
      t.session = txn.long_();
      (void)txn.int_();
      t.zxid = txn.long_();
      t.time_ms = txn.long_();
      const auto type = txn.int_();
      changes_of(type, entry.substr(txn.at()), t.changes);
      // What two servers' copies must agree on: who, and what it changed.
      t.body = std::to_string(t.session);
      for (const auto& c : t.changes)
        t.body += " " + std::to_string(c.kind) + (c.ephemeral ? "e" : "p") + c.path;
      out.push_back(std::move(t));
    }
  } catch (const std::out_of_range&) {
    // A torn last record: what came before stands.
  }
  return out;
}

std::string session_hex(std::int64_t id) {
  char text[32];
  std::snprintf(text, sizeof text, "%llx", static_cast<unsigned long long>(id));
  return text;
}

std::int64_t parse_hex(const std::string& text) {
  unsigned long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    throw std::invalid_argument("bad session id '" + text + "'");
  return static_cast<std::int64_t>(value);
}

}  // namespace

ServerRecord read_txn_logs(const std::vector<std::vector<std::string>>& servers,
                           const std::string& prefix) {
  ServerRecord record;
  // Each zxid's copies, by server. A transaction is taken as committed when a
  // majority of the servers logged it (the same change): a committed one was
  // logged by a quorum, and logs are never purged here. A leader cut off (a
  // frozen one, say) may log proposals of its own that no quorum ever saw,
  // stamped while the others had moved on; a server that came back by a
  // snapshot keeps such a tail in its old log. Those are not the truth.
  std::map<std::int64_t, std::vector<Txn>> copies;
  for (std::size_t server = 0; server < servers.size(); ++server) {
    std::set<std::int64_t> seen;  // one copy per server (a zxid in two of its files: once)
    for (const auto& file : servers[server])
      for (auto& t : read_log(file, record.problems))
        if (seen.insert(t.zxid).second) copies[t.zxid].push_back(std::move(t));
  }
  const std::size_t quorum = servers.size() / 2 + 1;
  std::map<std::int64_t, Txn> by_zxid;
  for (auto& [zxid, list] : copies) {
    std::map<std::string, std::size_t> votes;
    for (const auto& t : list) ++votes[t.body];
    const auto best =
        std::max_element(votes.begin(), votes.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    if (best->second >= quorum) {
      for (auto& t : list)
        if (t.body == best->first) {
          by_zxid.emplace(zxid, std::move(t));
          break;
        }
    } else if (list.size() >= quorum) {
      record.problems.push_back("zxid " + std::to_string(zxid) + ": the servers' copies disagree");
    } else {
      ++record.unconfirmed;
    }
  }
  std::map<std::string, std::size_t> alive;                  // path -> index in lives
  std::map<std::int64_t, std::set<std::string>> ephemerals;  // session -> its live lock nodes
  const auto end_life = [&](const std::string& path, const Txn& t, const char* why) {
    const auto it = alive.find(path);
    if (it == alive.end()) return;
    auto& life = record.lives[it->second];
    life.dzxid = t.zxid;
    life.deleted = t.time_ms * 1'000'000;
    life.end = why;
    life.deleter = t.session;
    if (life.owner != 0) ephemerals[life.owner].erase(path);
    alive.erase(it);
  };
  for (const auto& [zxid, t] : by_zxid) {
    ++record.transactions;
    record.last_zxid = zxid;
    for (const auto& change : t.changes) {
      if (change.kind == Change::close_session) {
        const auto owned = ephemerals[t.session];  // a copy: end_life edits it
        for (const auto& path : owned) end_life(path, t, "session_closed");
        ephemerals.erase(t.session);
        continue;
      }
      if (!change.path.starts_with(prefix) || !is_lock_node_name(change.path)) continue;
      if (change.kind == Change::remove) {
        end_life(change.path, t, "delete");
        continue;
      }
      if (alive.count(change.path)) {
        record.problems.push_back("zxid " + std::to_string(zxid) + " creates " + change.path +
                                  ", which the record has alive already");
        continue;
      }
      NodeLife life;
      life.path = change.path;
      life.czxid = zxid;
      life.created = t.time_ms * 1'000'000;
      life.owner = change.ephemeral ? t.session : 0;
      if (life.owner != 0) ephemerals[life.owner].insert(life.path);
      alive[life.path] = record.lives.size();
      record.lives.push_back(std::move(life));
    }
  }
  return record;
}

std::vector<std::vector<std::string>> txn_log_files(const std::string& ensemble_dir) {
  namespace fs = std::filesystem;
  std::vector<std::vector<std::string>> servers;
  for (const auto& server : fs::directory_iterator(ensemble_dir)) {
    if (!server.path().filename().string().starts_with("data-")) continue;
    std::vector<std::string> files;
    const auto logs = server.path() / "version-2";
    if (fs::is_directory(logs))
      for (const auto& file : fs::directory_iterator(logs))
        if (file.path().filename().string().starts_with("log."))
          files.push_back(file.path().string());
    std::sort(files.begin(), files.end());
    servers.push_back(std::move(files));
  }
  return servers;
}

Fields life_fields(const NodeLife& life) {
  return {{"path", word(life.path)},
          {"czxid", std::to_string(life.czxid)},
          {"created", std::to_string(life.created)},
          {"owner", session_hex(life.owner)},
          {"dzxid", std::to_string(life.dzxid)},
          {"deleted", life.deleted ? std::to_string(*life.deleted) : "-"},
          {"end", life.end.empty() ? "alive" : life.end},
          {"deleter", session_hex(life.deleter)}};
}

NodeLife parse_life(const Event& e) {
  NodeLife life;
  life.path = e.get("path");
  if (life.path.empty()) throw std::invalid_argument("a life record without a path");
  life.czxid = e.integer("czxid");
  life.created = e.integer("created");
  life.owner = parse_hex(e.get("owner"));
  life.dzxid = e.integer("dzxid");
  if (e.get("deleted") != "-") life.deleted = e.integer("deleted");
  if (e.get("end") != "alive") life.end = e.get("end");
  life.deleter = parse_hex(e.get("deleter"));
  return life;
}

std::vector<NodeLife> read_server_record(const std::string& path) {
  std::vector<NodeLife> lives;
  for (const auto& e : read_events(path)) {
    if (e.name != "life") continue;
    try {
      lives.push_back(parse_life(e));
    } catch (const std::invalid_argument& x) {
      throw std::runtime_error(path + ":" + std::to_string(e.line) + ": " + x.what());
    }
  }
  return lives;
}

bool is_lock_node_name(std::string_view path) {
  const auto name = path.substr(path.rfind('/') + 1);
  for (const std::string_view mark : {"-lock-", "-__READ__", "-__WRIT__", "-lease-", "-latch-"})
    if (name.find(mark) != std::string_view::npos) return true;
  return false;
}

}  // namespace zkr::chaos
