// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// Copies byte ranges between open files in the kernel (`copy_file_range(2)`: a clone where the
/// file system shares extents, an in-kernel copy otherwise), falling back to `pread`/`pwrite`
/// where the call is missing or refused (another file system, an old kernel). Blocking.
package enum FileRangeCopy {
    private typealias CopyFileRange = @convention(c) (Int32, UnsafeMutablePointer<Int64>?, Int32, UnsafeMutablePointer<Int64>?, Int, UInt32) -> Int

    private static let call: CopyFileRange? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "copy_file_range") else { return nil }
        return unsafeBitCast(symbol, to: CopyFileRange.self)
    }()

    /// The block size clones are aligned to (the file systems that clone use 4 KiB blocks or
    /// a divisor of it).
    static let cloneBlock: Int64 = 4096

    /// Copies `count` bytes at `sourceOffset` of `source` to `targetOffset` of `target`.
    ///
    /// A file system clones only whole blocks at block-aligned offsets, and the kernel copies a
    /// range that starts off a block boundary the slow way to its end; so when both offsets are
    /// equally far from a block boundary (an unchanged region at the same place in both files),
    /// the bytes up to the next boundary are copied on their own first, and the aligned rest can
    /// be cloned (its last partial block is copied by the kernel).
    /// - Throws: `UbiquityError` (`io`) when a read or write fails, or `source` ends early.
    package static func copy(from source: Int32, at sourceOffset: Int64, to target: Int32, at targetOffset: Int64, count: Int64) throws {
        let misalignment = sourceOffset % cloneBlock
        if misalignment != 0, misalignment == targetOffset % cloneBlock, count > 2 * cloneBlock {
            let head = cloneBlock - misalignment
            try copyRange(from: source, at: sourceOffset, to: target, at: targetOffset, count: head)
            try copyRange(from: source, at: sourceOffset + head, to: target, at: targetOffset + head, count: count - head)
            return
        }
        try copyRange(from: source, at: sourceOffset, to: target, at: targetOffset, count: count)
    }

    private static func copyRange(from source: Int32, at sourceOffset: Int64, to target: Int32, at targetOffset: Int64, count: Int64) throws {
        var input = sourceOffset, output = targetOffset
        var left = count
        if let call {
            while left > 0 {
                let done = call(source, &input, target, &output, Int(min(left, 1 << 30)), 0)
                if done < 0 {
                    if errno == EINTR { continue }
                    break  // EXDEV, ENOSYS, EINVAL, EOPNOTSUPP…: the plain copy below
                }
                if done == 0 { throw UbiquityError(.io, "the source ended \(left) bytes early while copying a range") }
                left -= Int64(done)
            }
        }
        guard left > 0 else { return }
        let piece = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: piece, alignment: 16)
        defer { buffer.deallocate() }
        while left > 0 {
            let got = pread(source, buffer.baseAddress!, Int(min(left, Int64(piece))), off_t(input))
            if got < 0 {
                if errno == EINTR { continue }
                throw UbiquityError(.io, "cannot read a range to copy: \(String(cString: strerror(errno)))")
            }
            if got == 0 { throw UbiquityError(.io, "the source ended \(left) bytes early while copying a range") }
            var written = 0
            while written < got {
                let wrote = pwrite(target, buffer.baseAddress! + written, got - written, off_t(output) + off_t(written))
                if wrote < 0 {
                    if errno == EINTR { continue }
                    throw UbiquityError(.io, "cannot write a copied range: \(String(cString: strerror(errno)))")
                }
                written += wrote
            }
            input += Int64(got)
            output += Int64(got)
            left -= Int64(got)
        }
    }
}
