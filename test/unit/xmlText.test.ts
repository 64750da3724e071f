import { expect } from 'chai';
import { xmlAttributes, xmlElement, xmlEscape } from '../../src/domain/exports/xmlText.js';

describe('XML text of the ODM export', () => {
  it('escapes markup, keeps line breaks and tabs as references and replaces what XML 1.0 cannot hold', () => {
    expect(xmlEscape('a & b < c > "d"')).to.equal('a &amp; b &lt; c &gt; &quot;d&quot;');
    expect(xmlEscape('line 1\r\nline\t2')).to.equal('line 1&#13;&#10;line&#9;2');
    expect(xmlEscape('bell\u0007 nul\u0000 \uFFFF')).to.equal('bell\uFFFD nul\uFFFD \uFFFD');
    expect(xmlEscape('lone \uD800 high, lone \uDC00 low, pair \uD83D\uDE00')).to.equal('lone \uFFFD high, lone \uFFFD low, pair \uD83D\uDE00');
    expect(xmlEscape('Кириллица ünïcödé')).to.equal('Кириллица ünïcödé');
  });

  it('writes attributes in order, leaving out undefined ones', () => {
    expect(xmlAttributes({ OID: 'IT.VS.SBP', Length: 3, SignificantDigits: undefined, Name: 'a"b' })).to.equal(' OID="IT.VS.SBP" Length="3" Name="a&quot;b"');
    expect(xmlElement('ItemData', { ItemOID: 'X', Value: '<1>' })).to.equal('<ItemData ItemOID="X" Value="&lt;1&gt;"/>');
    expect(xmlElement('A', {}, ['<B/>'])).to.equal('<A><B/></A>');
  });
});
