// SPDX-License-Identifier: Apache-2.0

/// The mounted folder's inodes as the kernel knows them: a node per name it looked up, keyed by
/// its folder and name (the name shown, which for an evicted file is the document's name, not
/// its stub's). Paths are computed from the nodes, so a rename moves a node and everything under
/// it in one step. A node lives while the kernel holds a lookup of it (FUSE's `nlookup`): a name
/// removed or replaced detaches its node (it has no path any more, open files keep working on
/// their descriptors), and a forget that brings its count to zero drops it.
///
/// A value without I/O: the file system keeps one behind a lock.
package struct MountNodeTable: Sendable {
    /// The root's node ID (FUSE_ROOT_ID).
    package static let rootID: UInt64 = 1

    private struct Node: Sendable {
        var parent: UInt64
        var name: String
        var lookups: UInt64
        var attached: Bool
    }

    private struct Key: Hashable, Sendable {
        var parent: UInt64
        var name: String
    }

    private var nodes: [UInt64: Node] = [rootID: Node(parent: 0, name: "", lookups: 1, attached: true)]
    private var children: [Key: UInt64] = [:]
    private var nextID: UInt64 = rootID + 1

    /// An empty table: the root only.
    package init() {}

    /// The number of nodes (the root included).
    package var count: Int { nodes.count }

    /// The node for `name` in folder `parent`, made if new, with one more lookup; nil when
    /// `parent` is unknown or detached.
    package mutating func lookUp(_ name: String, in parent: UInt64) -> UInt64? {
        guard let folder = nodes[parent], folder.attached else { return nil }
        let key = Key(parent: parent, name: name)
        if let id = children[key] {
            nodes[id]!.lookups += 1
            return id
        }
        let id = nextID
        nextID += 1
        nodes[id] = Node(parent: parent, name: name, lookups: 1, attached: true)
        children[key] = id
        return id
    }

    /// Takes back one lookup of `id` (a name that did not reach the kernel after all).
    package mutating func unlookUp(_ id: UInt64) { forget(id, count: 1) }

    /// The node already known for `name` in `parent`, if any.
    package func child(_ name: String, in parent: UInt64) -> UInt64? {
        children[Key(parent: parent, name: name)]
    }

    /// The path of node `id` relative to the mounted folder ("" for the root), or nil when it
    /// is unknown or detached (it or a folder above it was removed).
    package func path(of id: UInt64) -> String? {
        if id == Self.rootID { return "" }
        var names: [String] = []
        var current = id
        while current != Self.rootID {
            guard let node = nodes[current], node.attached else { return nil }
            names.append(node.name)
            current = node.parent
        }
        return names.reversed().joined(separator: "/")
    }

    /// The path of `name` in folder `parent`, or nil when `parent` has none.
    package func path(of name: String, in parent: UInt64) -> String? {
        guard let folder = path(of: parent) else { return nil }
        return folder.isEmpty ? name : folder + "/" + name
    }

    /// The kernel forgets `count` lookups of `id`; the node goes at zero.
    package mutating func forget(_ id: UInt64, count: UInt64) {
        guard id != Self.rootID, var node = nodes[id] else { return }
        node.lookups = node.lookups > count ? node.lookups - count : 0
        guard node.lookups == 0 else {
            nodes[id] = node
            return
        }
        nodes[id] = nil
        let key = Key(parent: node.parent, name: node.name)
        if node.attached, children[key] == id { children[key] = nil }
    }

    /// `name` in `parent` is gone (unlinked, removed): its node, if any, is detached.
    package mutating func remove(_ name: String, in parent: UInt64) {
        guard let id = children.removeValue(forKey: Key(parent: parent, name: name)) else { return }
        nodes[id]?.attached = false
    }

    /// `name` in `parent` was renamed to `newName` in `newParent`: its node moves (with what is
    /// under it), the one it replaced is detached. `exchange`: the two swapped places.
    package mutating func move(_ name: String, in parent: UInt64, to newName: String, in newParent: UInt64, exchange: Bool = false) {
        let from = Key(parent: parent, name: name)
        let to = Key(parent: newParent, name: newName)
        guard from != to else { return }
        let moving = children.removeValue(forKey: from)
        let replaced = children.removeValue(forKey: to)
        if let moving {
            nodes[moving]?.parent = newParent
            nodes[moving]?.name = newName
            children[to] = moving
        }
        if let replaced {
            if exchange {
                nodes[replaced]?.parent = parent
                nodes[replaced]?.name = name
                children[from] = replaced
            } else {
                nodes[replaced]?.attached = false
            }
        }
    }
}
