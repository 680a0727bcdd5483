#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "base/error.h"

namespace jf {

static std::string errno_text() { return std::strerror(errno); }

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open '" + path + "': " + errno_text());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw Error("cannot stat '" + path + "': " + errno_text());
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error("'" + path + "' is a directory, expected a file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      throw Error("cannot map '" + path + "': " + errno_text());
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

void MappedFile::drop_pages(const void* p, size_t n) const {
  const auto* b = static_cast<const uint8_t*>(p);
  if (data_ == nullptr || b < data_ || n > size_ || b - data_ > static_cast<ptrdiff_t>(size_ - n)) return;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(b) + page - 1) / page * page;
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(b) + n) / page * page;
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);  // advice: failure is harmless
}

PageBuffer::PageBuffer(size_t n) : size_(n) {
  if (n == 0) return;
  void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw Error("cannot allocate " + std::to_string(n >> 20) + " MB: " + errno_text());
  ::madvise(p, n, MADV_HUGEPAGE);  // advice: without it (or without THP) the memory is the same, only slower to fill
  data_ = static_cast<uint8_t*>(p);
}

PageBuffer::~PageBuffer() {
  if (data_) ::munmap(data_, size_);
}

PageBuffer::PageBuffer(PageBuffer&& o) noexcept : data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

PageBuffer& PageBuffer::operator=(PageBuffer&& o) noexcept {
  if (this != &o) {
    if (data_) ::munmap(data_, size_);
    data_ = o.data_, size_ = o.size_;
    o.data_ = nullptr, o.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& o) noexcept { *this = std::move(o); }

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    release();
    data_ = o.data_;
    size_ = o.size_;
    path_ = std::move(o.path_);
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

void MappedFile::release() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

std::string read_text_file(const std::string& path) {
  if (is_directory(path)) throw Error("'" + path + "' is a directory, expected a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open '" + path + "': " + errno_text());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

AtomicFileWriter::AtomicFileWriter(const std::string& path)
    : path_(path), tmp_(path + ".tmp." + std::to_string(::getpid())) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot create '" + tmp_ + "': " + errno_text());
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void AtomicFileWriter::write(const void* bytes, size_t n) {
  JF_CHECK(fd_ >= 0, "write after commit");
  const auto* p = static_cast<const uint8_t*>(bytes);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw Error("cannot write '" + tmp_ + "': " + errno_text());
    }
    p += w;
    n -= static_cast<size_t>(w);
    written_ += static_cast<uint64_t>(w);
  }
}

void AtomicFileWriter::commit() {
  JF_CHECK(fd_ >= 0, "commit twice");
  int fd = fd_;
  fd_ = -1;
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp_.c_str());
    throw Error("cannot flush '" + tmp_ + "': " + errno_text());
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    std::string e = errno_text();
    ::unlink(tmp_.c_str());
    throw Error("cannot rename '" + tmp_ + "' to '" + path_ + "': " + e);
  }
}

void write_file_atomic(const std::string& path, const void* bytes, size_t n) {
  AtomicFileWriter w(path);
  w.write(bytes, n);
  w.commit();
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace jf
